/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * internal.h - table of contents of the library, one section per file, in
 * layer order: each file calls only into the files above it (make
 * check-layering: no cycle). Where a layer must reach one above it, the
 * upper one hands it a pointer (named_recover_fn).
 *
 *   os.c            every system call, behind a replaceable table
 *   log.c, env.c    messages; HUGEKV_* variables
 *   trace.c, trace.h  probe semaphores (a leaf)
 *   numa.c          topology, hugepage pools, THP mode, memlock
 *   cgroup.c        the hugetlb cgroup's fault-time limit
 *   opts.c          the one option check (create and plan); pool names
 *   backing.c       page sizes; the parts of one node segment
 *   plan.c          the arena's layout: segments per node (hkv_pool_plan())
 *   arena.c         the memory: map, bind, prefault.c, arena_verify.c
 *   fork.c          pools do not survive fork(): the generation
 *   shheap.c, meta.c  a named pool's file heap; bookkeeping arrays
 *   extent.c        free-extent index of one lane (extent.h: extent_group.c,
 *                   extent_bins.c, extent_tree.c; extent_check.c)
 *   named_lock.c    a named pool's locks (pool, lanes): process-shared, a
 *                   dead holder's found; recovery through named_recover_fn
 *                   (named.c sets it)
 *   lane_defer.c    frees answered at once, run by the lane's holder
 *   lane_call.c     the lane lock; calls run by the lock holder (combining)
 *   frag.c, lane.c  a lane: index, lock, counters; its frag probe
 *                   (lane_one.h: the allocation's lane_call(), inline)
 *   res.c           residency state, its lock, callback frames (res.h)
 *   named_pins.c    a named pool's pins per process (named.h)
 *   unit.c, unit_sum.c, unit_list.c   units; checksums; listing
 *   evict.c, room.c eviction; room before an allocation
 *   multi.c         calls that span lanes (alloc_lanes, free, HKV_LANE_ANY)
 *   compat.c        the legacy free-slot view
 *   unit_check.c    hkv_check() of the units
 *   named_recover.c a named pool's dead processes: liveness, recovery, check
 *   stats.c         hkv_stats(), hkv_check(): call down into every layer,
 *                   called by none below
 *   statpage.c, stats_print.c   the stats page other processes read; printing
 *   named.c         named pools' files: create, attach, detach, unlink
 *   pool.c          the top: pool life cycle (hkv_pool_create(), _attach(),
 *                   _destroy(): arena, lanes, residency, named.c, statpage.c)
 *                   and the single-lane calls
 *
 * The declarations below come in that order where they can; some sit with
 * the structure they need (struct hkv_pool, in pool.c's section).
 *
 * Everything here has hidden visibility (-fvisibility=hidden); only the
 * HKV_API declarations of include/hugekv.h are exported (lib/libhugekv.map).
 */
#ifndef HKV_INTERNAL_H
#define HKV_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hugekv.h"

#define HKV_MIN(a, b)	((a) < (b) ? (a) : (b))
#define HKV_MAX(a, b)	((a) > (b) ? (a) : (b))
#define HKV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define HKV_ROUND_UP(v, a)	(((v) + (a) - 1) / (a) * (a))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/*
 * Prefetch a line for writing. GCC 12 drops __builtin_prefetch() calls of
 * hkv_free()'s entry (free_prefetch() in multi.c) during its sinking pass,
 * so on x86 the instruction is written out; PREFETCHW is a NOP on CPUs
 * that lack it.
 */
#if defined(__x86_64__) || defined(__i386__)
#define hkv_prefetch_w(p)	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)(p)))
#else
#define hkv_prefetch_w(p)	__builtin_prefetch((p), 1)
#endif

/* relaxed atomics for gauges read without the owner's lock */
#define HKV_LOAD(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define HKV_STORE(p, v)		__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define HKV_ADD(p, v)		__atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

/* size of the first released layouts (sz below these is -EINVAL) */
#define HKV_OPTS_SZ0	(offsetof(struct hkv_pool_opts, free_room_high) + sizeof(double))
#define HKV_STATS_SZ0	(offsetof(struct hkv_stats, largest_free_extent) + sizeof(uint64_t))

/* ---- os.c: every system call of the library, behind a replaceable table */
#include <sched.h>
#include <sys/types.h>
struct rlimit;
struct stat;
/* every entry returns 0 (or a count, descriptor, size) or -errno */
struct os_ops {
	int (*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off,
		    void **out);
	int (*munmap)(void *addr, size_t len);
	int (*madvise)(void *addr, size_t len, int advice);
	int (*mbind)(void *addr, unsigned long len, int mode,
		     const unsigned long *nodemask, unsigned long maxnode, unsigned flags);
	long (*move_pages)(int pid, unsigned long count, void **pages, const int *nodes,
			   int *status, int flags);	/* pages not moved */
	int (*open)(const char *path, int flags);	/* a descriptor */
	ssize_t (*read)(int fd, void *buf, size_t len);	/* bytes */
	int (*close)(int fd);
	int (*thread_create)(pthread_t *t, void *(*fn)(void *), void *arg);
	int (*thread_join)(pthread_t t);
	int (*set_affinity)(const cpu_set_t *set);	/* calling thread */
	int (*getrlimit)(int resource, struct rlimit *rl);
	/* libnuma topology */
	int (*numa_available)(void);			/* -ENOSYS: no NUMA support */
	int (*numa_max_node)(void);			/* highest node number */
	long long (*node_size)(int node);		/* bytes, -ENOENT: no such node */
	int (*node_cpus)(int node, cpu_set_t *set);
	uint64_t (*now_ns)(void);			/* CLOCK_MONOTONIC */
	/* process-private futex: sleep while *addr == val; wake up to n */
	int (*futex_wait)(int *addr, int val);		/* 0, -EAGAIN, -EINTR */
	int (*futex_wake)(int *addr, int n);		/* threads woken */
	/* a futex shared between processes (named pools' locks, which call
	 * os_default_ops: bookkeeping, like meta.c's memory) */
	int (*futex_wait_shared)(uint32_t *addr, uint32_t val, uint64_t timeout_ns);
	int (*futex_wake_shared)(uint32_t *addr, int n);
	/* membarrier(2) of this process's threads: MEMBARRIER_CMD_* */
	int (*membarrier)(int cmd);			/* 0 or -errno */
	/* named pools' files (named.c); open_file adds O_NOFOLLOW */
	int (*open_file)(const char *path, int flags, unsigned mode);	/* fd */
	int (*fstat)(int fd, struct stat *st);
	int (*ftruncate)(int fd, uint64_t len);
	int (*fallocate)(int fd, uint64_t off, uint64_t len);	/* mode 0 */
	ssize_t (*pread)(int fd, void *buf, size_t len, uint64_t off);
	int (*unlink)(const char *path);
	int (*flock)(int fd, int op);			/* LOCK_* */
	/* the calling thread's NUMA policy (named.c: a memory file's pages) */
	int (*get_mempolicy)(int *mode, unsigned long *nodemask, unsigned long maxnode);
	int (*set_mempolicy)(int mode, const unsigned long *nodemask, unsigned long maxnode);
};
extern const struct os_ops os_default_ops;
extern const struct os_ops *os;		/* what the library calls */
/* replace the table (tests); NULL restores the default */
void os_set_ops(const struct os_ops *ops);
/* read a small file (sysfs/procfs) into buf, NUL-terminated; bytes or -errno */
ssize_t os_read_file(const char *path, char *buf, size_t len);
/* the first mount of /proc/self/mounts @match takes: its mount point in out */
int os_find_mount(bool (*match)(const char *type, const char *opts, void *arg), void *arg,
		  char *out, size_t len);
/* read an unsigned decimal from a file; 0 or -errno */
int os_read_u64(const char *path, uint64_t *out);
/* a /proc stat file's process: 1 runs (*start: its start time), 0 gone or
 * a zombie, -errno unreadable */
int os_proc_stat(const char *path, uint64_t *start);
/* a running process's start time; 0 gone, a zombie or unreadable */
uint64_t os_proc_start(int pid);

/* ---- log.c: messages to the log callback or stderr ---------------------- */
enum { HKV_LOG_ERR, HKV_LOG_WARN, HKV_LOG_INFO, HKV_LOG_DEBUG };
void hkv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_set_level(int level);	/* HUGEKV_LOG (env.c); -1 = quiet */
int log_level(void);
/* around code that holds a pool lock: queue this thread's messages and
 * deliver them at the outermost release (the log callback may call back
 * into the pool) */
void log_hold(void);
void log_release(void);
void log_once(pthread_once_t *once, void (*fn)(void));	/* delivers after the once */
void log_fork_child(void);	/* fork.c: the child's log lock starts free */

/* ---- env.c: HUGEKV_<OPTION> variables, parsed once --------------------- */
struct hkv_env {
	int backing;		/* HUGEKV_BACKING, -1 = unset */
	int node;		/* HUGEKV_NODE, -2 = unset */
	int prefault_threads;	/* HUGEKV_PREFAULT_THREADS, -1 = unset */
	int strict;		/* HUGEKV_STRICT, -1 = unset */
	int log_level;		/* HUGEKV_LOG, default HKV_LOG_WARN */
	int lane_bias;		/* HUGEKV_LANE_BIAS, -1 = unset (on) */
	int lane_defer;		/* HUGEKV_LANE_DEFER, -1 = unset (on) */
};
const struct hkv_env *env_get(void);
void env_reload(void);	/* tests only: parse the environment again */
/* parse helpers, shared with tools' tests; return 0 or -EINVAL */
int env_parse_backing(const char *s, int *out);
int env_parse_uint(const char *s, unsigned long max, unsigned long *out);

/* ---- numa.c: topology, hugepage pools, THP mode, memlock -------------- */
#define HKV_MAX_NODES	HKV_PLAN_NODES
#define HKV_PGSZ_4K	(4096ull)
#define HKV_PGSZ_2M	(2ull << 20)
#define HKV_PGSZ_1G	(1ull << 30)

struct numa_topo_pool {		/* one hugepage size on one node (or global) */
	bool present;		/* the kernel offers this size */
	uint64_t total, free, resv;	/* resv: global only */
};

struct topo_node {
	int node;
	unsigned ncpus;
	cpu_set_t cpus;
	struct numa_topo_pool huge_2m, huge_1g;
};

struct topo {
	bool numa;		/* kernel has NUMA support (mbind works) */
	unsigned nnodes;	/* nodes with memory (at most HKV_MAX_NODES) */
	struct topo_node node[HKV_MAX_NODES];
	struct numa_topo_pool glob_2m, glob_1g;	/* /sys/kernel/mm/hugepages */
	char thp_mode[16];	/* "" = no THP */
	uint64_t memlock;	/* RLIMIT_MEMLOCK soft, UINT64_MAX = unlimited */
};

/* libnuma calls are serialized (its CPU-mask cache is not thread-safe) */
int numa_topo_read(struct topo *t);
void numa_fork_child(void);	/* fork.c: the child's libnuma lock starts free */
/* the entry of node n, or NULL */
const struct topo_node *numa_topo_find(const struct topo *t, int n);
const struct numa_topo_pool *numa_topo_pool(const struct topo_node *n, uint64_t pgsz);
const struct numa_topo_pool *numa_topo_glob(const struct topo *t, uint64_t pgsz);

/* ---- cgroup.c: the hugetlb cgroup's fault-time limit ------------------- */
/* bytes of pgsz hugepages the process may still fault in (UINT64_MAX: no limit) */
uint64_t cgroup_hugetlb_room(uint64_t pgsz);

/* ---- opts.c: the one option check (create and plan) ------------------- */
#define HKV_MAX_LANES		HKV_POOL_MAX_LANES	/* more is -E2BIG */
#define HKV_MAX_EVICT_WINDOW	1024
/* the caller's options checked, defaults and HUGEKV_* applied; 0 or -errno */
int opts_effective(const struct hkv_pool_opts *in, struct hkv_pool_opts *out);
/* a named pool's name: HKV_NAME_MAX letters, digits, ".", "_", "-" */
bool named_name_ok(const char *name);

/* ---- backing.c: page sizes, and the parts of one node segment -------- */
#define HKV_SEG_PARTS	4	/* one part per page size at most */
#define HKV_ARENA_SEGS	HKV_PLAN_PARTS

struct seg_req {
	const struct hkv_pool_opts *o;	/* effective */
	const struct topo *t;
	const struct topo_node *n;	/* the segment's node */
	uint64_t raw;			/* bytes the segment must hold */
	uint64_t cap;			/* largest alignment allowed, 0 = any */
	bool exact;			/* inner segment: fill raw, never round up */
	bool plentiful;			/* every size offered and free ("wanted") */
	uint64_t *planned;		/* hugepages per backing taken so far */
};
int backing_segment(const struct seg_req *rq, struct hkv_plan_part *part, unsigned *nparts,
		 int *why);

/* ---- plan.c: segments per node and the backing each gets --------------- */
uint64_t backing_pgsz(int backing);

/* fill plan from effective opts and a topology; 0 or -ENOMEM (strict short)
 * or -EINVAL (bad node) */
int plan_arena(const struct hkv_pool_opts *o, const struct topo *t, struct hkv_plan *p);
uint64_t plan_granule(const struct hkv_plan *p);	/* the arena's alignment */
uint64_t backing_align(int backing);	/* THP: 2 MiB, else the page size */
/* next backing to try after b under the policy of o, or -1 */
int plan_next_backing(const struct hkv_pool_opts *o, int b);

/* ---- arena.c, prefault.c, arena_verify.c: the memory behind a pool ------
 * A segment is one part of a plan: one page size on one node. */
struct arena_seg {
	char *base;
	uint64_t bytes, first_page, npages;
	int node, verified_node;	/* verified: -1 mixed/unknown */
	const struct topo_node *tn;	/* CPUs for prefault (NULL: any) */
	int backing, wanted;
	uint64_t pgsz, wanted_pgsz;
	unsigned flags, fallbacks, threads;
	int why;			/* -errno of the first fallback */
	uint64_t prefault_ns, misplaced;
	uint64_t t0;			/* its mapping began (probes' ns) */
};

struct hkv_arena {
	uint64_t pool_id;
	char *base;			/* reserved range, aligned */
	uint64_t bytes, kv_bytes;
	struct hkv_pool_opts opts;	/* effective */
	struct topo topo;
	unsigned nseg, fallbacks;
	uint64_t prefault_ns;
	uint64_t t0;			/* creation started (probes' ns) */
	struct arena_seg seg[HKV_ARENA_SEGS];	/* one per plan part */
};

/* prefault n mapped segments at once, each with threads pinned to its node;
 * errs[i] receives segment i's result; returns 0 or -ENOMEM (bookkeeping) */
int prefault_segments(struct hkv_arena *a, struct arena_seg **segs, unsigned n, int *errs);
/* move_pages placement and smaps page size; 0, or -EIO (strict mismatch) */
int arena_verify(struct hkv_arena *a, struct arena_seg *s);
/* smallest KernelPageSize of the VMAs over [addr, addr+len), bytes or -errno */
long long arena_verify_smaps(const void *addr, uint64_t len);

/*
 * pool.c calls arena_create() for page_bytes > 0 after it has set pool->id,
 * ->opts (effective: defaults and HUGEKV_* applied, flags included),
 * ->npages, ->page_bytes and ->chunk_pages, and before the lanes exist. On
 * success the arena sets pool->base (first byte of page 0, one contiguous
 * virtual range for all pages) and *out; on failure it has given back
 * everything and returns -errno. hkv_page_ptr() is base + page * page_bytes.
 */
int arena_create(struct hkv_pool *pool, struct hkv_arena **out);
void arena_destroy(struct hkv_arena *a);
int arena_regions(const struct hkv_arena *a, struct hkv_region *r, unsigned max);
void arena_stats(const struct hkv_arena *a, struct hkv_stats *st);

/* ---- shheap.c: the heap inside a named pool's bookkeeping file -------- */
#define SHHEAP_MIN_CLASS	7	/* 128-byte blocks */
#define SHHEAP_CLASSES		48
struct shheap {			/* in the file: addresses are absolute */
	uint64_t base, end, top;	/* range, bump pointer */
	uint64_t used;			/* bytes of live blocks */
	uint64_t free_head[SHHEAP_CLASSES];
};
void shheap_init(struct shheap *h, void *base, uint64_t len);
void *shheap_alloc(struct shheap *h, uint64_t bytes);	/* zeroed, or NULL */
void *shheap_realloc(struct shheap *h, void *p, uint64_t bytes);
void shheap_free(struct shheap *h, void *p);
bool shheap_owns(const struct shheap *h, const void *p);
bool shheap_is_block(const struct shheap *h, const void *p);
uint64_t shheap_sweep(struct shheap *h, bool (*keep)(void *ctx, const void *payload),
		      void *ctx);

/* ---- meta.c: bookkeeping memory: large arrays on transparent huge pages;
 * everything in a named pool's file heap while this thread holds (or
 * builds) that pool (meta_heap_swap()) */
void *meta_alloc(size_t bytes);		/* zeroed */
void meta_free(void *p, size_t bytes);
void *meta_calloc(size_t n, size_t size);	/* calloc() */
void *meta_aligned(size_t bytes);		/* 64-byte aligned, zeroed */
void *meta_realloc(void *p, size_t bytes);	/* realloc() */
void meta_release(void *p);			/* free() of the three above */
/* the file heap this thread allocates from (NULL: malloc); returns the old one */
struct shheap *meta_heap_swap(struct shheap *h);
/* this thread's hold of named pools and where its bookkeeping goes: one
 * thread-local for all of it, its address looked up once per lane call
 * (__tls_get_addr() in the shared library). Not initial-exec: the
 * library's thread-locals (2 KiB with the log's held messages) do not fit
 * the static TLS that glibc keeps for a dlopen() (Python). */
struct named_tls {
	struct shheap *heap;	/* the file heap allocations go to, or NULL */
	struct shheap *before;	/* heap before the outermost hold */
	unsigned depth;		/* holds of named pools' locks */
	uint8_t owner;		/* this process's slot + 1 in the pool held */
	uint32_t tid;		/* gettid(), for the locks' words (named_lock.c) */
	uint64_t tid_gen;	/* fork_gen + 1 when tid was read; 0: never */
};
extern __thread struct named_tls named_tls;

/* a named pool's lock word (named_lock.c): the holder's thread id, its
 * process slot + 1 above it */
#define NL_TID_MASK	((1u << 22) - 1)	/* pid_max is at most 2^22 */
#define NL_SLOT_SHIFT	22			/* 7 bits: slot + 1 <= 64 */
extern uint64_t fork_gen;
void named_tid_read(struct named_tls *t, uint64_t gen);

/* this thread's word for a lock of a named pool where its process has slot
 * + 1 slot1: its id (cached: a fork() child is a new thread, fork.c counts
 * forks) and slot1 */
static inline uint32_t named_word(struct named_tls *t, uint8_t slot1)
{
	uint64_t gen = HKV_LOAD(&fork_gen) + 1;

	if (unlikely(t->tid_gen != gen))
		named_tid_read(t, gen);
	return t->tid | (uint32_t)slot1 << NL_SLOT_SHIFT;
}

/* this thread's holds: the first routes its bookkeeping to the file's heap
 * and names its process in the owner bytes it writes */
static inline void named_hold_enter(struct named_tls *t, struct shheap *heap, uint8_t slot1)
{
	if (t->depth++ == 0) {
		t->before = t->heap;
		t->heap = heap;
		t->owner = slot1;
	}
}

static inline void named_hold_leave(struct named_tls *t)
{
	if (--t->depth == 0)
		t->heap = t->before;
}

/* ---- extent.c: free-extent index of one lane (its own header: extent.h) -
 *
 * Free extents of a page space [base, base + npages). Exact size bins for
 * small extents (each with a bitmap of the groups its extents start in,
 * lowest address first) and a treap keyed by (len, start) for large ones.
 * Boundary tags (node id at the first and last page of each free extent)
 * make coalescing O(1). Pages are space-relative (uint32) inside; struct
 * hkv_extent values are absolute.
 */
#define XI_NIL		UINT32_MAX
#define XI_MAX_EXACT	256	/* sizes 1..XI_MAX_EXACT get exact bins */
#define XI_PAGES_PER_BIN 100	/* ... but one bin per 100 pages at most */
#define XI_LEVELS	6	/* group bitmap levels: 64^6 groups */
/* the metadata bound (hkv_stats metadata_bytes): bytes per page, per free
 * extent, per crowded group (one with an overflow block), per lane, and per
 * lane that had a deferred free (its queue, lane_defer.c) */
#define XI_META_PAGE	2
#define XI_META_EXTENT	64
#define XI_META_CROWDED	256
#define XI_META_LANE	704
#define XI_META_QUEUE	1152
#define XI_MAX_PAGES	(UINT32_MAX - 1)

struct fext {			/* one free extent; 32 bytes */
	uint32_t start, len;
	uint32_t prev, next;	/* treap children (next: node free list) */
	uint32_t parent;	/* treap parent; in a bin: 0, or XI_NIL once out */
	uint32_t prio;		/* treap priority; 0 = in an exact bin */
	uint32_t pad[2];
};

/*
 * Per-page state, one cache line per 64-page group: the allocated and
 * in_unit words, and the node ids of the group's pages that start or end a
 * free extent, as up to XI_GSLOTS (page offset + 1, id) pairs (key byte 0 =
 * empty slot; XI_KEY_START marks a first page). A group with more such
 * pages (a finely fragmented one) keeps them in an overflow block of 64 ids indexed by page (blk = block +
 * 1) and a bitmap of them in keys. A free or an allocation reads and
 * writes its neighbours' tags in the line it already holds for the bitmap.
 */
#define XI_GSLOTS	8
#define XI_KEY_START	0x80	/* key flag: the page starts its extent */
struct xgroup {
	uint64_t alloc, in_unit;
	uint64_t keys;			/* XI_GSLOTS key bytes, or the bitmap */
	union {
		uint32_t id[XI_GSLOTS];
		uint64_t starts;	/* overflowed: the tagged pages that start */
	};
	uint32_t blk;			/* 0, or overflow block + 1 */
	uint32_t pad;
} __attribute__((aligned(64)));

/* a free extent found for a take: node, first page and length, as the pick
 * read them (a bin pick from the group line, without the node) */
struct xpick {
	uint32_t id, start, len;
	bool more;		/* a bin pick: its group holds another of the bin */
	uint8_t slot;		/* a bin pick in a line-held group: its start key's */
};

struct xindex {
	uint64_t base;		/* absolute page of space page 0 */
	uint32_t npages;
	uint32_t barrier;	/* extents never cross multiples of this (0 = none) */
	uint64_t *allocated;	/* 1 bit per page: allocated (XI_WORD stride) */
	uint64_t *in_unit;	/* 1 bit per page: in a cache unit (= allocated + 1) */
	struct xgroup *grp;	/* = allocated: the per-page state */
	uint32_t (*ovf)[64];	/* overflow blocks of crowded groups */
	uint32_t ovf_cap, ovf_free, ovf_nfree;	/* blocks, free-list head, free */
	/* a named pool's owner array (per absolute page, the holder's slot +
	 * 1, 0 when free), as its distance from this struct in 64-byte units
	 * (both cache-line aligned in the pool's file); 0 for none. An offset,
	 * not a pointer: it fills a hole, the struct stays four lines */
	int32_t owner_off;
	struct fext *node;
	uint32_t ncap, nused, free_node;	/* node array, free-list head */
	uint32_t nexact;	/* sizes 1..nexact are binned exactly */
	uint64_t *bin_bits;	/* per bin: groups where its extents start */
	uint32_t bin_stride, bin_levels;	/* words per bin, levels */
	uint32_t bin_off[XI_LEVELS];	/* word offset of each level (leaf first) */
	/* the last pick's figures if it was a bin pick, else id XI_NIL; read
	 * only right after that pick (nothing invalidates it on a change) */
	struct xpick hint;
	bool runs_exact;	/* no barrier inside a group line (run = extent) */
	uint32_t plan_id;	/* xi_reserve_plan()'s fit for plan_n pages, for
				 * the xi_take() that follows it */
	uint64_t plan_n;
	uint64_t *bin_mask;	/* bitmap of non-empty bins (exact and long) */
	uint64_t bin_words;	/* bitmap of non-zero bin_mask words (<= 17) */
	uint32_t *bin_count;	/* extents per bin, exact and long (UFI without a scan) */
	uint32_t *bin_low;	/* per bin: its lowest set group bit, XI_NIL if empty */
	/* long bins, lengths nexact+1..nlong: per length a treap of its extents
	 * by start and its lowest (root, lowest node id pairs) */
	uint32_t *long_bin;
	uint32_t nlong;
	uint32_t nbinwords;
	uint32_t root;		/* treap of extents longer than nlong */
	uint32_t tree_max;	/* largest node of the treap */
	uint32_t seed;		/* treap priorities */
	uint64_t free_pages;	/* written under the lane lock, read relaxed */
	uint64_t free_extents;
	uint64_t largest;	/* largest free extent */
	uint64_t tree_count;
};

/* page bitmaps: the allocated and in_unit words of p's group line */
#define XI_WORD(p)	(8 * ((p) >> 6))
static inline bool xi_page_free(const struct xindex *x, uint64_t rel)
{
	return !(x->allocated[XI_WORD(rel)] & (1ull << (rel & 63)));
}

int xi_init(struct xindex *x, uint64_t base, uint64_t npages, uint64_t barrier);
void xi_fini(struct xindex *x);
/* extents of the best answer for n pages, or -ENOMEM; plans, takes nothing */
long xi_plan_multi(const struct xindex *x, uint64_t n);
static inline long xi_plan(const struct xindex *x, uint64_t n, bool contig)
{
	if (n > x->free_pages)
		return -ENOMEM;
	if (likely(n <= x->largest))
		return 1;
	return contig ? -ENOMEM : xi_plan_multi(x, n);
}
/* take n pages as exactly nplan extents (from xi_plan), right after
 * xi_reserve_plan() of them (nothing changed in between) */
void xi_take(struct xindex *x, uint64_t n, long nplan, struct hkv_extent *ext);
/* the best fit for n pages taken into ext when one extent answers: 1; 0
 * if none does (nothing done: xi_plan() and the rest answer); -ENOMEM */
long xi_alloc_one(struct xindex *x, uint64_t n, struct hkv_extent *ext);
/* 0 if every page of [start, start+len) is allocated and not in a unit,
 * -EINVAL if not allocated, -EBUSY if in a unit; absolute pages */
int xi_check_allocated(const struct xindex *x, uint64_t start, uint64_t len);
/* make room for @extra more free extents so xi_free cannot fail */
int xi_reserve(struct xindex *x, uint32_t extra);
/* make room so xi_take of k extents cannot fail */
int xi_reserve_grow(struct xindex *x, uint32_t blocks);
static inline int xi_reserve_take(struct xindex *x, long k)
{
	return likely(x->ovf_nfree >= (uint64_t)k) ? 0
		: xi_reserve_grow(x, (uint32_t)HKV_MIN(k, (long)UINT32_MAX));
}
/* make room so xi_take() of a plan (k extents of n pages) cannot fail */
int xi_reserve_plan(struct xindex *x, uint64_t n, long k);
/* make room so xi_free() of one piece cannot fail; absolute pages */
int xi_reserve_free(struct xindex *x, uint64_t start, uint64_t len);

/* node id tagged at page p (space-relative), XI_NIL if p is not the first
 * or last page of a free extent */
uint32_t xi_tag(const struct xindex *x, uint32_t p);
/* the tagged pages of a 64-page group, as a bitmap (checks) */
uint64_t xi_tagged(const struct xindex *x, uint64_t group);
uint64_t xi_tagged_starts(const struct xindex *x, uint64_t group);
/* free allocated pages (checked), coalescing; needs xi_reserve(x, 1) */
void xi_free(struct xindex *x, uint64_t start, uint64_t len);
/* xi_reserve_free(), xi_check_allocated(), xi_free() of one piece in one
 * step: 0, -ENOMEM, -EINVAL or -EBUSY (nothing changed) */
int xi_free_one(struct xindex *x, uint64_t start, uint64_t len);
/* set/clear the allocated bits of absolute [start, start+len) */
void xi_mark(struct xindex *x, uint64_t start, uint64_t len, bool allocated);
/* on x->allocated or x->in_unit (XI_WORD stride); bits are space-relative;
 * most extents sit in one word, so that case is inline */
bool xi_test_range_slow(const uint64_t *bits, uint64_t from, uint64_t len, bool all_set);
void xi_set_range_slow(uint64_t *bits, uint64_t from, uint64_t len, bool set);

/* bits [from, from + len) of from's word; 1 <= len <= 64 - (from & 63) */
static inline uint64_t xi_word_bits(uint64_t from, uint64_t len)
{
	return ~0ull >> (64 - len) << (from & 63);
}

/* the allocated/in_unit check of the common free, inline */
static inline int xi_check_allocated_fast(const struct xindex *x, uint64_t start, uint64_t len)
{
	uint64_t from = start - x->base, off = from & 63;

	if (likely(off + len <= 128)) {	/* one or two group lines */
		uint64_t m = off + len <= 64 ? xi_word_bits(from, len) : ~0ull << off;
		uint64_t m2 = off + len <= 64 ? 0 : xi_word_bits(0, off + len - 64);
		const uint64_t *w = &x->allocated[XI_WORD(from)], *w2 = w + 8;

		if ((w[0] & m) != m || (m2 && (w2[0] & m2) != m2))
			return -EINVAL;
		return (w[1] & m) || (m2 && (w2[1] & m2)) ? -EBUSY : 0;
	}
	return xi_check_allocated(x, start, len);
}

static inline bool xi_test_range(const uint64_t *bits, uint64_t from, uint64_t len,
				 bool all_set)
{
	if (len && (from & 63) + len <= 64) {
		uint64_t m = xi_word_bits(from, len), w = bits[XI_WORD(from)] & m;

		return all_set ? w == m : w == 0;
	}
	return xi_test_range_slow(bits, from, len, all_set);
}

/* store a word of the allocated or in_unit bitmap: lane_defer_free() reads
 * them without the lock (a plain store, but not one torn or merged) */
static inline void xi_bits_store(uint64_t *w, uint64_t v)
{
	HKV_STORE(w, v);
}

/* one word, or two (an extent of up to 65 pages crossing a group) inline */
static inline void xi_set_range(uint64_t *bits, uint64_t from, uint64_t len, bool set)
{
	uint64_t off = from & 63, m, m2, *w = &bits[XI_WORD(from)];

	if (len && off + len <= 128) {
		m = off + len <= 64 ? xi_word_bits(from, len) : ~0ull << off;
		m2 = off + len <= 64 ? 0 : xi_word_bits(0, off + len - 64);
		if (set) {
			xi_bits_store(&w[0], w[0] | m);
			if (m2)
				xi_bits_store(&w[8], w[8] | m2);
		} else {
			xi_bits_store(&w[0], w[0] & ~m);
			if (m2)
				xi_bits_store(&w[8], w[8] & ~m2);
		}
		return;
	}
	xi_set_range_slow(bits, from, len, set);
}
/* a named pool's owner bytes of the index's pages (indexed by space page), or NULL */
static inline uint8_t *xi_owner(const struct xindex *x)
{
	return x->owner_off ? (uint8_t *)x + (int64_t)x->owner_off * 64 + x->base : NULL;
}

/* record that owner (per absolute page) holds the named pool's pages;
 * 0 or -E2BIG when it is out of reach of the offset */
static inline int xi_set_owner(struct xindex *x, uint8_t *owner)
{
	int64_t d = (owner - (uint8_t *)x) / 64;

	if ((owner - (uint8_t *)x) % 64 || d == 0 || d < INT32_MIN || d > INT32_MAX)
		return -E2BIG;
	x->owner_off = (int32_t)d;
	return 0;
}

/* a named pool's record of who holds [rel, +len): this process, or none */
static __always_inline void xi_own(struct xindex *x, uint32_t rel, uint64_t len, bool held)
{
	if (unlikely(x->owner_off)) {
		uint8_t *o = xi_owner(x) + rel, v = held ? named_tls.owner : 0;

		if (likely(len == 1))	/* no call for the common page */
			*o = v;
		else
			memset(o, v, len);
	}
}

/* the free extents in descending length, in groups of one length: treap
 * extents one by one, then each bin (count extents of length bin) */
struct xi_cursor {
	uint32_t id, bin;
	uint64_t len, count;
};
bool xi_cursor_first(const struct xindex *x, struct xi_cursor *c);
bool xi_cursor_next(const struct xindex *x, struct xi_cursor *c);
/* length of the best fit for n pages, or 0 */
uint64_t xi_fit_len(const struct xindex *x, uint64_t n);
/* sum over free extents of floor(len / r) * r: O(bins + large extents) */
uint64_t xi_usable(const struct xindex *x, uint64_t r);
/* free page ids in order into out (room for x->free_pages); returns count */
uint64_t xi_free_ids(const struct xindex *x, uint64_t *out);
size_t xi_metadata_bytes(const struct xindex *x);
/* read one word per page of the bin bitmaps: mapped here (named pools) */
void xi_map_bins(const struct xindex *x);

/* ---- extent_tree.c: treap of free extents longer than nexact ----------- */
void tree_insert(struct xindex *x, uint32_t id);
void tree_remove(struct xindex *x, uint32_t id);
/* smallest (len, start) with len >= n, or XI_NIL */
uint32_t tree_lower_bound(const struct xindex *x, uint64_t n);
/* in-order predecessor, or XI_NIL */
uint32_t tree_prev(const struct xindex *x, uint32_t id);

/* ---- extent_check.c: full invariant check ------------------------------ */
/* in a check function: log the broken invariant and return -EUCLEAN */
#define HKV_CHECK(cond, ...)						\
	do {								\
		if (unlikely(!(cond))) {				\
			hkv_log(HKV_LOG_ERR, "hkv_check: " __VA_ARGS__); \
			return -EUCLEAN;				\
		}							\
	} while (0)
int xi_check(const struct xindex *x);

/* ---- named_lock.c: a named pool's locks (named.h has the file) ----------
 * A named pool is used by several processes: each lane has a lock in the
 * pool's file (lane_lock(), lane_call() of a named lane take it) and the
 * pool has one (res_lock(), and lanes_lock(): a call over several lanes
 * takes the pool lock first, then the lanes in ascending order). The
 * biased, combining and deferring paths of lane_call.c and lane_defer.c
 * are off (they pass pointers into one process's memory). A caller that
 * finds a lock held by a dead process repairs the pool first
 * (named_recover.c, through named_recover_fn: a layer above the locks).
 * While it holds a lock a thread allocates bookkeeping from the file's
 * heap (meta_heap_swap()). */
struct named_hdr;
void named_lock(struct named_hdr *h);
/* this process's slot in h (slot1 0: it left); attach and detach */
void named_local_set(struct named_hdr *h, uint8_t slot1, uint64_t pool_id);
void named_unlock(struct named_hdr *h);
struct lane;
void named_lane_lock(struct lane *l);
void named_lane_unlock(struct lane *l);
/* around an evict callback: the callback starts with no hold */
void named_cb_enter(struct named_tls *save);
void named_cb_leave(const struct named_tls *save);

/* ---- lane.c, lane_call.c: a lane = an extent index + lock + counters --- */
struct lane_counters {
	uint64_t allocs, alloc_failures, frees, extents_returned;
	uint64_t multi_extent_allocs, pages_allocated, pages_freed;
	uint64_t served_calls;		/* lane_call()s run for a waiting caller */
};

struct lane;
struct lane_call;
typedef int (*lane_fn)(struct hkv_pool *pool, struct lane *l, struct lane_call *c);

/*
 * The first waiting call is copied into the lane's own line (the slot): the
 * holder finds it, its arguments and the place for its result in the one
 * line it checks at every unlock. Further waiting calls are listed.
 */
enum { LANE_SLOT_FREE, LANE_SLOT_FILLING, LANE_SLOT_POSTED, LANE_SLOT_DONE };

struct lane_slot {
	int state;		/* LANE_SLOT_*: FILLING and DONE belong to the caller */
	int ret;
	lane_fn fn;
	struct hkv_pool *pool;
	uint64_t a, n;		/* a: start; with ext: flags << 32 | max_ext */
	struct hkv_extent *ext;
};

/* spin-wait hint: lets the sibling hyperthread run, saves power */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * Frees deferred to the lane's holder (lane_defer.c): a bounded queue that
 * any thread appends to and only the thread holding the lane (locked, or
 * biased) runs, in order. An entry's seq is 8 * the position it is for,
 * plus its phase: free for that position, claimed by a freeing thread,
 * filled (a free to run), void (nothing to run), or dropped (a claim the
 * holder gave up waiting for: its thread frees the entry).
 */
#define LANE_DEFER_SIZE	64
enum { DEFER_FREE, DEFER_CLAIMED, DEFER_FILLED, DEFER_VOID, DEFER_DROPPED };
/* the seq of an entry for position p in phase ph */
static inline uint64_t defer_seq(uint64_t p, unsigned ph)
{
	return 8 * p + ph;
}

/* 16 bytes: four to a line, which the freeing thread writes and the
 * holder reads */
struct lane_defer_ent {
	uint64_t seq;
	uint32_t start, len;	/* pages of the lane's space (xindex.base + start) */
};

/* made by the lane's first deferred free (most lanes never have one) */
struct lane_defer {
	uint64_t tail __attribute__((aligned(64)));	/* the next position, a hint */
	/* the holder's line: freeing threads do not read it */
	uint64_t head __attribute__((aligned(64)));	/* the next to run */
	uint64_t ran, errors;	/* frees run; found invalid when run */
	uint64_t barrier;	/* lane_defer_take()'s locked operation */
	struct lane_defer_ent ent[LANE_DEFER_SIZE] __attribute__((aligned(64)));
};

/* a named pool's lane (l->named set) uses lock, busy, bias and quiet its
 * own way: named_lock.c (lock and bias: a holder's word, not 0/1) */
struct lane {
	int lock;		/* LANE_UNLOCKED, _LOCKED, _SLEEPERS (lane_lock()) */
	int busy;		/* the owner runs a call without the lock (bias) */
	uint64_t first, npages;	/* absolute pages of the lane */
	uint64_t gen;		/* mutation generation (free_slots cache) */
	/* frag probe rate limit */
	uint64_t frag_largest, frag_extents;
	uint32_t frag_ops;
	int bias;		/* the owner runs its calls without the lock */
	uint32_t quiet;		/* the owner's calls since another thread came */
	uint32_t revocations;	/* lane_unbias() of another thread's bias */
	/* a line of their own: a waiting caller writes slot and posted, and
	 * reads owner on every call, without taking the holder's lines */
	struct lane_call *posted __attribute__((aligned(64)));	/* lane_call()s waiting */
	void *owner;		/* thread that ran the lane's last lane_call()s */
	struct lane_slot slot;
	/* written once, read by the holder at every call: a line of its own,
	 * so that the slot stays in one line */
	struct lane_defer *defer __attribute__((aligned(64)));	/* frees to run, or NULL */
	struct named_hdr *named;	/* a named pool's lane: its pool, else NULL */
	struct xindex xi __attribute__((aligned(64)));
	struct lane_counters c;
} __attribute__((aligned(64)));

void lane_defer_fini(struct lane *l);
void lane_defer_take(struct lane *l, unsigned settle);
bool lane_defer_free(struct hkv_pool *pool, struct lane *l, uint64_t start, uint64_t len);
uint64_t lane_defer_pages(const struct lane *l);

/* an entry at the head of the lane's queue: a free, or one being claimed
 * (a relaxed look, for readers without the lock: hkv_available()) */
static inline bool lane_defer_queued(const struct lane *l)
{
	const struct lane_defer *q = __atomic_load_n(&l->defer, __ATOMIC_ACQUIRE);
	uint64_t h;

	if (likely(!q))
		return false;
	h = HKV_LOAD(&q->head);
	return __atomic_load_n(&q->ent[h % LANE_DEFER_SIZE].seq, __ATOMIC_ACQUIRE) >
	       defer_seq(h, DEFER_FREE);
}

/* the lane's free pages with those of the frees queued for its holder, a
 * relaxed reading; *queued: lane_defer_queued() */
static inline uint64_t lane_avail(const struct lane *l, bool *queued)
{
	uint64_t n = HKV_LOAD(&l->xi.free_pages);

	*queued = lane_defer_queued(l);
	if (unlikely(*queued))
		n += lane_defer_pages(l);
	return n;
}

/*
 * A single-lane call (flat combining). The lane's owner, the thread that ran
 * its last calls, runs its calls under the lane's lock. Any other thread
 * posts its call and waits: the owner runs posted calls before it unlocks.
 * A caller that waits past a grace period (the owner went quiet) or finds
 * the lock free after it takes the lock, runs what is posted and becomes
 * the owner. The lane's lines then stay in one cache instead of moving to
 * each caller in turn, which is what two threads on one lane otherwise pay
 * for (hkv-bench lanes); a posted call is validated and answered exactly
 * as if its caller had run it.
 */
struct lane_call {
	struct lane_call *next;		/* in lane.posted */
	lane_fn fn;
	struct hkv_pool *pool;
	uint64_t start, n;		/* free: the extent; alloc: n pages */
	struct hkv_extent *ext;		/* alloc: receives the extents */
	unsigned flags, max_ext;
	int ret;
	int done;			/* set (release) once ret is written */
	bool frees;			/* a free: its caller never becomes the owner
					 * (lane_call_slow() says why) */
};

int lane_init(struct lane *l, uint64_t first, uint64_t npages, uint64_t barrier);
void lane_fini(struct lane *l);
void lane_serve(struct lane *l, const struct lane_call *mine);
/* c by value: its address is then taken nowhere on lane_call()'s inline
 * paths, so that the compiler keeps its fields in registers there instead
 * of storing them for a slow path that most calls never take */
int lane_call_slow(struct hkv_pool *pool, struct lane *l, lane_fn fn, struct lane_call c);
/* lane_call() of a named pool: fn under the lane's lock (named_lock.c) */
int named_lane_call(struct hkv_pool *pool, struct lane *l, lane_fn fn, struct lane_call *c);
static __always_inline int named_lane_call_biased(struct hkv_pool *pool, struct lane *l,
						  lane_fn fn, struct lane_call *c);
void lane_serve_biased(struct lane *l);
void lane_bias_on(const struct hkv_pool *pool, struct lane *l);
void lane_unbias(struct lane *l);
bool lane_bias_setup(void);

/* the lane waits, in pauses (lane_call.c says why they are scaled) */
struct lane_waits {
	unsigned lock_spin;	/* lane_lock(): spin rounds before sleeping */
	unsigned poll;		/* a waiting caller: pauses between looks */
	unsigned grace;		/* a non-owner: pauses before it takes the lock */
	unsigned spin_max;	/* a waiting caller: pauses before it sleeps */
};
extern struct lane_waits lane_waits;
struct lane_waits lane_waits_scaled(uint64_t ns_1024);
void lane_wait_setup(void);

/* before each call the lane's holder runs (its own or a waiting one): the
 * frees deferred to it, if the lane ever had one (lane_defer.c) */
static inline void lane_run_deferred(struct lane *l)
{
	if (unlikely(HKV_LOAD(&l->defer)))
		lane_defer_take(l, lane_waits.grace);
}

/*
 * The lane lock: one compare-and-swap to take, one exchange to release; a
 * thread that cannot get it spins a little, then sleeps on a futex. A
 * pthread mutex costs about 120 instructions per lock and unlock for the
 * same two atomic operations, and nobody but lane.c waits on this lock.
 *
 * A lane used by one thread only is biased to it: once its owner has run
 * LANE_BIAS_AFTER calls in a row with no other thread at the lane, it runs
 * its calls without the lock word (lane_call()), announcing each in
 * l->busy with a plain store. Both atomic operations drain the store
 * buffer, so a call waited for the previous call's stores to cold lines;
 * a biased call does not. Any other thread that takes the lock revokes the
 * bias (lane_unbias()): membarrier(2) makes the owner's busy store visible
 * or its next look at the lock see it held, then it waits for busy to
 * clear. That costs microseconds, once per LANE_BIAS_AFTER calls at most.
 */
enum { LANE_UNLOCKED, LANE_LOCKED, LANE_SLEEPERS };
#define LANE_BIAS_AFTER	16384

void lane_lock_wait(struct lane *l);
void lane_wake(struct lane *l);

static inline bool lane_trylock(struct lane *l)
{
	int unlocked = LANE_UNLOCKED;

	if (!__atomic_compare_exchange_n(&l->lock, &unlocked, LANE_LOCKED, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return false;
	if (unlikely(HKV_LOAD(&l->bias)))
		lane_unbias(l);
	lane_run_deferred(l);
	return true;
}

static inline void lane_lock(struct lane *l)
{
	if (unlikely(l->named)) {
		named_lane_lock(l);
		return;
	}
	if (unlikely(!lane_trylock(l)))
		lane_lock_wait(l);
}

/* unlock without running waiting calls (lane_unlock() runs them first) */
static inline void lane_release(struct lane *l)
{
	if (unlikely(__atomic_exchange_n(&l->lock, LANE_UNLOCKED, __ATOMIC_RELEASE) ==
		     LANE_SLEEPERS))
		lane_wake(l);
}

/* every unlock first runs the calls posted while the lock was held */
static inline void lane_unlock(struct lane *l)
{
	if (unlikely(l->named)) {
		named_lane_unlock(l);
		return;
	}
	if (unlikely(HKV_LOAD(&l->slot.state) == LANE_SLOT_POSTED || HKV_LOAD(&l->posted)))
		lane_serve(l, NULL);
	lane_release(l);
}

/* this thread is the lane's owner (see struct lane_call) */
static inline bool lane_owned(const struct lane *l)
{
	return HKV_LOAD(&l->owner) == __builtin_thread_pointer();
}

/**
 * lane_call() - run @fn on a lane under its lock, here or by the lane's owner
 * @pool: the pool
 * @l: the lane
 * @fn: the call; reads its arguments from @c
 * @c: arguments, on the caller's stack
 *
 * Return: what @fn returned.
 */
static inline __attribute__((always_inline)) int lane_call(struct hkv_pool *pool,
							   struct lane *l, lane_fn fn,
							   struct lane_call *c)
{
	int ret;

	c->pool = pool;
	if (unlikely(l->named))		/* its line is read anyway (defer) */
		return named_lane_call_biased(pool, l, fn, c);
	if (likely(lane_owned(l))) {
		if (likely(HKV_LOAD(&l->bias))) {
			/* announce, then look: the lock free (acquire: a
			 * revoker's release is seen with all it wrote) and
			 * the bias still this thread's */
			HKV_STORE(&l->busy, 1);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* membarrier's side */
			if (likely(__atomic_load_n(&l->lock, __ATOMIC_ACQUIRE) == LANE_UNLOCKED &&
				   lane_owned(l) && HKV_LOAD(&l->bias))) {
				lane_run_deferred(l);
				ret = fn(pool, l, c);
				__atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE);
				if (unlikely(HKV_LOAD(&l->slot.state) == LANE_SLOT_POSTED ||
					     HKV_LOAD(&l->posted)))
					lane_serve_biased(l);
				return ret;
			}
			__atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE);
		}
		if (likely(lane_trylock(l))) {
			ret = fn(pool, l, c);
			if (unlikely(++l->quiet == LANE_BIAS_AFTER))
				lane_bias_on(pool, l);
			lane_unlock(l);
			return ret;
		}
	}
	return lane_call_slow(pool, l, fn, *c);
}

/* lane owning an absolute page */
unsigned lane_of(const struct hkv_pool *pool, uint64_t page);
/* allocate from a locked lane; counts the result */
int lane_alloc_locked(struct hkv_pool *pool, struct lane *l, uint64_t n, unsigned flags,
		      struct hkv_extent *ext, unsigned max_ext);
/* the same as a lane_call() function */
int lane_alloc_fn(struct hkv_pool *pool, struct lane *l, struct lane_call *c);
/* the piece of [p, end) inside p's lane and chunk (extents never cross
 * either); returns the lane, sets *len */
unsigned lane_piece(const struct hkv_pool *pool, uint64_t p, uint64_t end, uint64_t *len);
#define for_each_piece(pool, e, p, len, li)					\
	for (uint64_t p = (e)->start, len, _end = (e)->start + (e)->len;	\
	     p < _end && ((li) = lane_piece(pool, p, _end, &len), 1); p += len)
/* lock or unlock lanes lo..hi, in ascending order (the lock order); a
 * named pool's pool lock first */
void lanes_lock(struct hkv_pool *pool, unsigned lo, unsigned hi);
void lanes_unlock(struct hkv_pool *pool, unsigned lo, unsigned hi);

/* ---- frag.c: fragmentation of a lane, the rate-limited frag probe ------- */
uint64_t frag_ufi_permille(const struct xindex *x, uint64_t r);

/* ---- pool.c: pool life cycle, single-lane entry points, accessors ------ */
struct hkv_arena;
struct hkv_res;
struct statpage;

struct hkv_pool {
	uint64_t id;
	struct hkv_pool_opts opts;	/* effective options (env applied) */
	uint64_t npages, page_bytes, chunk_pages;
	unsigned nlanes;
	struct lane *lanes;
	struct hkv_arena *arena;	/* NULL for index-only pools */
	char *base;			/* first byte of page 0, or NULL */
	struct hkv_res *res;		/* residency (res.c) */
	uint64_t fork_gen;		/* fork_gen when created (fork.c) */
	bool lane_bias;			/* lanes may be biased (lane_bias_on()) */
	bool lane_defer;		/* frees may be deferred (lane_defer_free()) */
	uint32_t bits_seq;		/* odd while a holder changes page bits it
					 * restores (pool_bits_unsettle()) */
	/* free_slots cache (compat.c) */
	pthread_mutex_t slots_lock;
	uint64_t *slots, nslots, slots_gen;
	bool slots_valid;
	char *label;			/* the pool's copy ("" if none) */
	struct statpage *page;		/* statpage.c, or NULL */
	/* off the one-extent path, so per pool (atomic adds): failures with
	 * -ENOSPC, and multi-extent answers by size (hkv_stats extents_hist;
	 * its first range, one extent, is allocs - multi_extent_allocs) */
	uint64_t alloc_nospc;
	uint64_t extents_hist[HKV_EXTENTS_HIST];
	struct named *named;		/* a named pool's files and slot, or NULL */
	struct unit_spares *unit_spare;	/* a private pool's freed unit
					 * records (unit.c), or NULL */
};

/* count a failed allocation (-ENOMEM or -ENOSPC) */
static inline void lane_count_failure(struct hkv_pool *pool, struct lane_counters *c, long err)
{
	c->alloc_failures++;
	if (err == -ENOSPC)
		HKV_ADD(&pool->alloc_nospc, 1);
}

/* count an allocation answered with k > 1 extents */
static inline void lane_count_multi(struct hkv_pool *pool, struct lane_counters *c, long k)
{
	unsigned b = k <= 2 ? 1 : k <= 4 ? 2 : k <= 8 ? 3 : k <= 16 ? 4 : 5;

	c->multi_extent_allocs++;
	HKV_ADD(&pool->extents_hist[b], 1);
}

void pool_bits_unsettle(struct hkv_pool *pool);
void pool_bits_settle(struct hkv_pool *pool);

/* free pages over the lanes, with the deferred frees that their next
 * holder runs: relaxed reads, no lock (hkv_available()) */
static inline uint64_t pool_free_pages(const struct hkv_pool *pool)
{
	uint64_t sum = 0;
	bool queued;

	for (unsigned i = 0; i < pool->nlanes; i++)
		sum += lane_avail(&pool->lanes[i], &queued);
	return sum;
}

/* ---- named.c, named_recover.c, unit_list.c: named pools (named.h) -------
 * pool->named: this process's view of a named pool */
struct named {
	struct named_hdr *hdr;
	struct shheap *heap;		/* the file's heap (in hdr) */
	/* per lane: 1 once its bin bitmaps were mapped here (xi_map_bins(),
	 * at the lane's first call under its lock in this process), written
	 * under the lane's lock; NULL: never (no memory) */
	uint8_t *bins_mapped;
	int meta_fd, mem_fd;
	unsigned slot;
	hkv_evict_fn evict_fn;		/* this process's evict callback */
	void *evict_ctx;
	struct hkv_arena *arena;	/* regions and stats (not mapped by arena.c) */
};
/*
 * hkv_pool_create() of a pool with a name, driven by pool.c: named_create()
 * makes and maps the files and sends this thread's bookkeeping to their
 * heap, pool.c builds the lanes and residency, named_create_finish(pool, c,
 * build's result) publishes the pool or removes the files. hkv_pool_attach():
 * named_attach(); hkv_pool_destroy() of one: named_detach() */
struct named_create_ctx;
int named_create(struct hkv_pool *pool, struct named_create_ctx **out);
int named_create_finish(struct hkv_pool *pool, struct named_create_ctx *c, int err);
int named_attach(struct hkv_pool *pool, const char *name);
void named_detach(struct hkv_pool *pool);
/* hkv_check() of a named pool's owner records (dead slots reaped first) */
int named_check(struct hkv_pool *pool);
/* named_pins.c: this process's pins, recorded (residency locked) */
int named_pin_note(struct hkv_pool *pool, uint64_t unit, bool pin);
int named_pins_split(struct hkv_pool *pool, uint64_t unit, uint64_t new_unit);

/*
 * lane_call() of a named lane biased to this thread, inline as a private
 * lane's (named_lock.c has the protocol): the caller's lock word, the
 * announcement in l->busy, the lock word seen free, the call under this
 * thread's hold. Any other case: named_lane_call().
 */
static __always_inline int named_lane_call_biased(struct hkv_pool *pool, struct lane *l,
						  lane_fn fn, struct lane_call *c)
{
	struct named_tls *t = &named_tls;
	uint8_t slot1 = (uint8_t)(pool->named->slot + 1);
	uint32_t me;
	int ret;

	/* one look-up: hidden from the compiler, which would otherwise call
	 * __tls_get_addr() again at each use rather than keep the address */
	__asm__("" : "+r"(t));
	me = named_word(t, slot1);

	if (likely((uint32_t)HKV_LOAD(&l->bias) == me)) {
		/* announce, then look: the lock word free (acquire: a revoker's
		 * release is seen with all it wrote) and the bias still ours */
		HKV_STORE(&l->busy, 1);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* membarrier's side */
		if (likely(__atomic_load_n(&l->lock, __ATOMIC_ACQUIRE) == 0 &&
			   (uint32_t)HKV_LOAD(&l->bias) == me)) {
			named_hold_enter(t, pool->named->heap, slot1);
			ret = fn(pool, l, c);
			named_hold_leave(t);
			__atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE);
			return ret;
		}
		__atomic_store_n(&l->busy, 0, __ATOMIC_RELEASE);
	}
	{
		/* a copy: c's own address then escapes nowhere, and the
		 * compiler keeps its fields in registers on the path above */
		struct lane_call nc = *c;

		return named_lane_call(pool, l, fn, &nc);
	}
}

/* ---- fork.c: pools do not survive fork() ---------------------------------
 * The arena is MADV_DONTFORK and lane locks may be held by threads the child
 * does not have: a pool created in another process answers -ECHILD (or NULL,
 * 0) and may only be destroyed, which then unmaps nothing. fork_gen counts
 * the forks this process descends from (a pthread_atfork child handler).
 */
extern uint64_t fork_gen;
/* register the handler (once); the generation pools created now record */
uint64_t fork_generation(void);
static inline bool pool_forked(const struct hkv_pool *pool)
{
	return unlikely(pool->fork_gen != HKV_LOAD(&fork_gen));
}

/* ---- multi.c: calls that span lanes, all or nothing --------------------- */
/* HKV_LANE_ANY: a lane with one extent of n pages, else the emptiest, else
 * several lanes (fewest extents, all locked); *lane_out is the lane, or
 * HKV_LANE_ANY for an answer from several. Extents, -ENOMEM or -ENOSPC */
int multi_alloc_any(struct hkv_pool *pool, uint64_t n, unsigned flags,
		    struct hkv_extent *ext, unsigned max_ext, unsigned *lane_out);

/* ---- compat.c: hkv_free_slots ------------------------------------------ */
void compat_fini(struct hkv_pool *pool);

/* ---- res.c, unit.c, evict.c, room.c, unit_check.c (res.h): residency ---
 * res.c: the state (created after the lanes), its lock, callback frames */
int res_create(struct hkv_pool *pool);
void res_destroy(struct hkv_pool *pool);
/* free a private pool's kept unit records (unit.c) */
void unit_spares_free(struct hkv_pool *pool);
/* this thread runs pool's evict callback (calls into it are refused) */
bool res_in_callback(const struct hkv_pool *pool);
/* residency fields of a snapshot; 0, -EDEADLK or -ECHILD */
int res_stats(struct hkv_pool *pool, struct hkv_stats *st);
/* room.c: before an HKV_ALLOC_EVICT allocation of n pages on lane (or ANY)
 * into max_ext extents: evicts only if that can make the request fit; 0,
 * -EDEADLK (inside the pool's evict callback) or -ECHILD (pool inherited
 * through fork()) */
int room_make(struct hkv_pool *pool, unsigned lane, uint64_t n, unsigned flags,
	      unsigned max_ext);
/* the same for hkv_alloc_lanes(): count[i] pages from every lane i */
int room_make_lanes(struct hkv_pool *pool, const uint64_t *count, unsigned flags,
		    unsigned max_ext);
/* unit_check.c: hkv_check() of the units (the residency and every lane lock) */
int unit_check(struct hkv_pool *pool);

/* ---- stats.c, stats_print.c: hkv_stats(), hkv_check(), hkv_stats_print() --
 * Above every layer they read, each through its own snapshot or check call
 * (arena_stats(), res_stats(), xi_check(), unit_check(), named_check()); no
 * layer below calls them. They define only public functions. */

/* ---- statpage.c: the stats page other processes read (above stats.c) ---
 * Started by pool.c once the pool is complete, stopped first at destroy. */
void statpage_start(struct hkv_pool *pool);
void statpage_stop(struct hkv_pool *pool);

/* ---- trace.c / trace.h: USDT probes (see trace.h) ----------------------- */

#endif /* HKV_INTERNAL_H */
