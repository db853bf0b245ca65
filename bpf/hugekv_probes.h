/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hugekv_probes.h - the USDT probes of provider "hugekv", each written
 * once: name and arguments here, and everything else generated from this
 * list (as the kernel's DEFINE_EVENT defines an event once): the probe
 * macros and semaphores of the libraries (lib/trace.h, lib/trace.c), the
 * probe ids and argument structs of the BPF programs (hugekv_trace.h,
 * hugekv_trace.bpf.c), hkv-trace's table of probes and the library each
 * lives in, and the probes hkv-bench trace counts.
 *
 * A row: X(LIB, name, ID, (T, arg)...), at most 6 arguments, T is U
 * (unsigned) or S (signed, -errno or -1 = none); LIB is CORE for
 * libhugekv.so, XFER for libhugekv-xfer.so. Arguments two probes share
 * come in the same order (pool id first). The probe fires after the
 * operation, carrying request and result together.
 *
 * This header is plain preprocessor: the library, the BPF programs and
 * the tools all include it.
 */
#ifndef HUGEKV_PROBES_H
#define HUGEKV_PROBES_H

#define HKV_PROBE_LIST(X)							\
	/* after every hkv_alloc / hkv_alloc_lanes (ret: extents or -errno;	\
	 * largest: pages in the largest extent returned) */			\
	X(CORE, alloc, ALLOC, (U, pool), (S, lane), (U, asked), (S, ret),	\
	  (U, first), (U, largest))						\
	/* after every hkv_free */						\
	X(CORE, free, FREE, (U, pool), (S, lane), (U, pages), (U, extents),	\
	  (S, ret))								\
	/* each unit evicted (reason: HKV_EVICT_*) */				\
	X(CORE, evict, EVICT, (U, pool), (S, lane), (U, unit), (U, pages),	\
	  (S, reason))								\
	/* each planned eviction run */						\
	X(CORE, evict_run, EVICT_RUN, (U, pool), (U, before), (U, target),	\
	  (U, freed), (U, units))						\
	/* on a fragmentation change, rate-limited (ufi: unusable-free	\
	 * permille of the lane's reference request size) */			\
	X(CORE, frag, FRAG, (U, pool), (U, lane), (U, fpages), (U, fext),	\
	  (U, largest), (U, ufi))						\
	/* pool creation: a segment mapped on pages of pgsz bytes */		\
	X(CORE, arena_map, ARENA_MAP, (U, pool), (S, node), (U, bytes),	\
	  (U, pgsz), (U, ns))							\
	/* pool creation: pages of wanted bytes not obtained (err: -errno) */	\
	X(CORE, arena_fallback, ARENA_FALLBACK, (U, pool), (S, node),		\
	  (U, bytes), (U, wanted), (S, err), (U, ns))				\
	/* a named pool restored after a process died holding its lock	\
	 * (pool: the recovering process's id of it; reclaimed: pages the	\
	 * dead held outside units; units: kept; dropped: unreadable units) */	\
	X(CORE, named_recover, NAMED_RECOVER, (U, pool), (U, reclaimed),	\
	  (U, units), (U, dropped))						\
	/* a transfer accepted for submission */				\
	X(XFER, xfer_submit, XFER_SUBMIT, (U, pool), (U, peer), (U, pages),	\
	  (U, ops), (U, bytes))							\
	/* a transfer ended (result: 0 or -errno; ns since its submission) */	\
	X(XFER, xfer_done, XFER_DONE, (U, pool), (U, peer), (U, ops),		\
	  (U, bytes), (S, result), (U, ns))					\
	/* the target served a single-copy request (op: HKV_XFER_OP_*;	\
	 * runs: process_vm_* iovecs; result: 0 or -errno) */			\
	X(XFER, xfer_copy, XFER_COPY, (U, pool), (U, peer), (U, op),		\
	  (U, runs), (U, bytes), (S, result))

/* the libraries, as HKV_PROBE_LIB_* values */
enum hkv_probe_lib { HKV_PROBE_LIB_CORE, HKV_PROBE_LIB_XFER };

/* ---- helpers to expand rows -------------------------------------------- */
#define HKV_PP_CAT_(a, b)	a##b
#define HKV_PP_CAT(a, b)	HKV_PP_CAT_(a, b)
#define HKV_PP_COUNT_(_1, _2, _3, _4, _5, _6, _7, n, ...) n
/* the number of arguments, 1 to 7 */
#define HKV_PP_COUNT(...)	HKV_PP_COUNT_(__VA_ARGS__, 7, 6, 5, 4, 3, 2, 1, 0)

/* M(index, x) for each argument x */
#define HKV_PP_EACH(M, ...) HKV_PP_CAT(HKV_PP_EACH_, HKV_PP_COUNT(__VA_ARGS__))(M, __VA_ARGS__)
#define HKV_PP_EACH_1(M, a)			M(0, a)
#define HKV_PP_EACH_2(M, a, b)			M(0, a) M(1, b)
#define HKV_PP_EACH_3(M, a, b, c)		M(0, a) M(1, b) M(2, c)
#define HKV_PP_EACH_4(M, a, b, c, d)		M(0, a) M(1, b) M(2, c) M(3, d)
#define HKV_PP_EACH_5(M, a, b, c, d, e)		M(0, a) M(1, b) M(2, c) M(3, d) M(4, e)
#define HKV_PP_EACH_6(M, a, b, c, d, e, f)	M(0, a) M(1, b) M(2, c) M(3, d) M(4, e) M(5, f)

/* the parts of an argument (T, name) */
#define HKV_ARG_TYPE_(t, n)	t
#define HKV_ARG_NAME_(t, n)	n
#define HKV_ARG_TYPE(arg)	HKV_ARG_TYPE_ arg
#define HKV_ARG_NAME(arg)	HKV_ARG_NAME_ arg
#define HKV_PP_STR_(x)		#x
#define HKV_PP_STR(x)		HKV_PP_STR_(x)

/* HKV_NARGS_<name>: each probe's argument count */
#define HKV_NARGS_ENUM_(lib, name, ID, ...) HKV_NARGS_##name = HKV_PP_COUNT(__VA_ARGS__),
enum { HKV_PROBE_LIST(HKV_NARGS_ENUM_) };

/* "pool lane asked ...": a probe's argument names, for listings */
#define HKV_ARG_STR_(i, arg)	" " HKV_PP_STR(HKV_ARG_NAME(arg))
#define HKV_PROBE_ARGS_STR(...)	HKV_PP_EACH(HKV_ARG_STR_, __VA_ARGS__)

#endif /* HUGEKV_PROBES_H */
