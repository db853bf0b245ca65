/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * trace.h - USDT probes of provider "hugekv", generated from the one probe
 * list, bpf/hugekv_probes.h (names and arguments are written there only).
 *
 * Each probe is a single nop until a tracer attaches. Probes with arguments
 * that cost something to compute are guarded by their semaphore
 * (HKV_PROBE_ON), which a tracer increments when it attaches. Invoke the
 * hkv_probe_<name>() macros from .c files only, so each probe site exists
 * once; a call whose argument count differs from the list does not
 * compile. Building with -DHKV_NO_PROBES compiles every probe out. A library defines the semaphores of its
 * probes once, with HKV_PROBE_SEMAPHORES(CORE) or (XFER).
 */
#ifndef HKV_TRACE_H
#define HKV_TRACE_H

#include "../bpf/hugekv_probes.h"

#ifndef HKV_NO_PROBES
#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC 1
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
#define HKV_SEMA_DEFINE(name) \
	__extension__ volatile unsigned short HKV_SEMA(name) \
	__attribute__((unused, section(".probes"), visibility("hidden")))

#define HKV_SEMA_DECLARE_(lib, name, ...) HKV_SEMA_DECLARE(name);
HKV_PROBE_LIST(HKV_SEMA_DECLARE_)

/* the semaphores of the probes of library LIB (CORE or XFER): once, in a
 * .c file of that library; semaphores live in .probes */
#define HKV_SEMA_IN_CORE_CORE(name)	HKV_SEMA_DEFINE(name);
#define HKV_SEMA_IN_CORE_XFER(name)
#define HKV_SEMA_IN_XFER_CORE(name)
#define HKV_SEMA_IN_XFER_XFER(name)	HKV_SEMA_DEFINE(name);
#define HKV_SEMA_IN_CORE(lib, name, ...) HKV_SEMA_IN_##lib##_CORE(name)
#define HKV_SEMA_IN_XFER(lib, name, ...) HKV_SEMA_IN_##lib##_XFER(name)
#define HKV_PROBE_SEMAPHORES(LIB)	HKV_PROBE_LIST(HKV_SEMA_IN_##LIB)

/* the argument count of a call must be the list's */
#define HKV_PROBE_CHECK(name, ...) \
	_Static_assert(HKV_PP_COUNT(__VA_ARGS__) == HKV_NARGS_##name, \
		       "hkv_probe_" #name "(): argument count differs from bpf/hugekv_probes.h")

#ifndef HKV_NO_PROBES

/* true while a tracer is attached to the probe */
#define HKV_PROBE_ON(name)	unlikely(HKV_SEMA(name) != 0)
#define HKV_PROBE(name, ...) do { \
	HKV_PROBE_CHECK(name, __VA_ARGS__); \
	STAP_PROBEV(hugekv, name, __VA_ARGS__); \
} while (0)

#else /* HKV_NO_PROBES: a build without probes */

#define HKV_PROBE_ON(name)	0
#define HKV_PROBE_VOID_(i, x)	(void)(x);
#define HKV_PROBE(name, ...) do { \
	HKV_PROBE_CHECK(name, __VA_ARGS__); \
	HKV_PP_EACH(HKV_PROBE_VOID_, __VA_ARGS__) \
} while (0)

#endif /* HKV_NO_PROBES */

/* the probe macros the call sites use, one per row of the list */
#define hkv_probe_alloc(...)		HKV_PROBE(alloc, __VA_ARGS__)
#define hkv_probe_free(...)		HKV_PROBE(free, __VA_ARGS__)
#define hkv_probe_evict(...)		HKV_PROBE(evict, __VA_ARGS__)
#define hkv_probe_evict_run(...)	HKV_PROBE(evict_run, __VA_ARGS__)
#define hkv_probe_frag(...)		HKV_PROBE(frag, __VA_ARGS__)
#define hkv_probe_arena_map(...)	HKV_PROBE(arena_map, __VA_ARGS__)
#define hkv_probe_arena_fallback(...)	HKV_PROBE(arena_fallback, __VA_ARGS__)
#define hkv_probe_named_recover(...)	HKV_PROBE(named_recover, __VA_ARGS__)
#define hkv_probe_xfer_submit(...)	HKV_PROBE(xfer_submit, __VA_ARGS__)
#define hkv_probe_xfer_done(...)	HKV_PROBE(xfer_done, __VA_ARGS__)
#define hkv_probe_xfer_copy(...)	HKV_PROBE(xfer_copy, __VA_ARGS__)

/* evict reasons */
enum { HKV_EVICT_WATERMARK = 1, HKV_EVICT_EXPLICIT = 2, HKV_EVICT_ALLOC = 3 };

struct hkv_pool;
struct lane;
/* times frag_emit() computed the frag arguments (tests read it) */
extern unsigned long frag_computed __attribute__((visibility("hidden")));
/* frag.c: fire "frag" if a tracer is attached and the lane changed enough
 * (cold: keeps the call out of the allocator's hot path layout) */
void frag_emit(struct hkv_pool *pool, struct lane *l, unsigned lane_no)
	__attribute__((cold));
static inline void trace_frag(struct hkv_pool *pool, struct lane *l, unsigned lane_no)
{
	if (HKV_PROBE_ON(frag))
		frag_emit(pool, l, lane_no);
}
/* frag_emit() with the lane's number found from l (cold: the division
 * that finds it is paid only while a tracer is attached) */
void frag_emit_lane(struct hkv_pool *pool, struct lane *l) __attribute__((cold));
/* trace_frag() of a lane of pool->lanes */
static inline void trace_frag_lane(struct hkv_pool *pool, struct lane *l)
{
	if (HKV_PROBE_ON(frag))
		frag_emit_lane(pool, l);
}

#endif /* HKV_TRACE_H */
