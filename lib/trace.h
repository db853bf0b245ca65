/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * trace.h - USDT probes of provider "hugekv".
 *
 * Each probe is a single nop until a tracer attaches. Probes with arguments
 * that cost something to compute are guarded by their semaphore
 * (HKV_PROBE_ON), which a tracer increments when it attaches. Invoke these
 * macros from .c files only, so each probe site exists once. Building with
 * -DHKV_NO_PROBES compiles every probe out (the baseline of hkv-bench trace).
 *
 *   alloc      pool, lane, pages asked, extents or -errno, first start,
 *              pages in largest extent
 *   free       pool, lane, pages, extents, result
 *   evict      pool, lane, unit, pages, reason
 *   evict_run  pool, free before, target, pages freed, units evicted
 *   frag       pool, lane, free pages, free extents, largest extent,
 *              unusable-free permille (UFI of the lane's reference size)
 *   arena_map      pool, node, bytes, page size obtained, ns
 *   arena_fallback pool, node, bytes, page size wanted, errno, ns
 */
#ifndef HKV_TRACE_H
#define HKV_TRACE_H

#ifndef HKV_NO_PROBES
#define _SDT_HAS_SEMAPHORES 1
/*
 * Arguments in registers or as constants only: the default "nor" lets gcc
 * pass memory operands such as 88(%r12,%rax,8), which libbpf 1.1's USDT
 * argument parser rejects (and which cost a tracer a user memory read).
 */
#ifndef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT nr
#endif
#include <sys/sdt.h>
#endif

#define HKV_SEMA(name)	hugekv_##name##_semaphore
#define HKV_SEMA_DECLARE(name) \
	extern volatile unsigned short HKV_SEMA(name) __attribute__((visibility("hidden")))

HKV_SEMA_DECLARE(alloc);
HKV_SEMA_DECLARE(free);
HKV_SEMA_DECLARE(evict);
HKV_SEMA_DECLARE(evict_run);
HKV_SEMA_DECLARE(frag);
HKV_SEMA_DECLARE(arena_map);
HKV_SEMA_DECLARE(arena_fallback);

#ifndef HKV_NO_PROBES

/* true while a tracer is attached to the probe */
#define HKV_PROBE_ON(name)	unlikely(HKV_SEMA(name) != 0)

#define hkv_probe_alloc(pool, lane, asked, ret, first, largest) \
	STAP_PROBE6(hugekv, alloc, pool, lane, asked, ret, first, largest)
#define hkv_probe_free(pool, lane, pages, next, ret) \
	STAP_PROBE5(hugekv, free, pool, lane, pages, next, ret)
#define hkv_probe_evict(pool, lane, unit, pages, reason) \
	STAP_PROBE5(hugekv, evict, pool, lane, unit, pages, reason)
#define hkv_probe_evict_run(pool, before, target, freed, units) \
	STAP_PROBE5(hugekv, evict_run, pool, before, target, freed, units)
#define hkv_probe_frag(pool, lane, fpages, fext, largest, ufi) \
	STAP_PROBE6(hugekv, frag, pool, lane, fpages, fext, largest, ufi)
#define hkv_probe_arena_map(pool, node, bytes, pgsz, ns) \
	STAP_PROBE5(hugekv, arena_map, pool, node, bytes, pgsz, ns)
#define hkv_probe_arena_fallback(pool, node, bytes, wanted, err, ns) \
	STAP_PROBE6(hugekv, arena_fallback, pool, node, bytes, wanted, err, ns)

#else /* HKV_NO_PROBES: the baseline copy hkv-bench trace compares against */

#define HKV_PROBE_ON(name)	0
#define HKV_PROBE_VOID5(a, b, c, d, e) \
	((void)(a), (void)(b), (void)(c), (void)(d), (void)(e))
#define hkv_probe_alloc(pool, lane, asked, ret, first, largest) \
	(HKV_PROBE_VOID5(pool, lane, asked, ret, first), (void)(largest))
#define hkv_probe_free(pool, lane, pages, next, ret) \
	HKV_PROBE_VOID5(pool, lane, pages, next, ret)
#define hkv_probe_evict(pool, lane, unit, pages, reason) \
	HKV_PROBE_VOID5(pool, lane, unit, pages, reason)
#define hkv_probe_evict_run(pool, before, target, freed, units) \
	HKV_PROBE_VOID5(pool, before, target, freed, units)
#define hkv_probe_frag(pool, lane, fpages, fext, largest, ufi) \
	(HKV_PROBE_VOID5(pool, lane, fpages, fext, largest), (void)(ufi))
#define hkv_probe_arena_map(pool, node, bytes, pgsz, ns) \
	HKV_PROBE_VOID5(pool, node, bytes, pgsz, ns)
#define hkv_probe_arena_fallback(pool, node, bytes, wanted, err, ns) \
	(HKV_PROBE_VOID5(pool, node, bytes, wanted, err), (void)(ns))

#endif /* HKV_NO_PROBES */

/* evict reasons */
enum { HKV_EVICT_WATERMARK = 1, HKV_EVICT_EXPLICIT = 2, HKV_EVICT_ALLOC = 3 };

struct hkv_pool;
struct lane;
/* times trace_frag_emit() computed the frag arguments (tests read it) */
extern unsigned long trace_frag_computed __attribute__((visibility("hidden")));
/* trace.c: fire "frag" if a tracer is attached and the lane changed enough
 * (cold: keeps the call out of the allocator's hot path layout) */
void trace_frag_emit(struct hkv_pool *pool, struct lane *l, unsigned lane_no)
	__attribute__((cold));
static inline void trace_frag(struct hkv_pool *pool, struct lane *l, unsigned lane_no)
{
	if (HKV_PROBE_ON(frag))
		trace_frag_emit(pool, l, lane_no);
}

#endif /* HKV_TRACE_H */
