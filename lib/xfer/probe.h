/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * probe.h - the transfer library's USDT probes, provider "hugekv", with
 * the semaphore pattern of the core's lib/trace.h: a single nop until a
 * tracer attaches; arguments in registers or constants only.
 *
 *   xfer_submit  pool id, peer id, pages, operations, bytes
 *   xfer_done    pool id, peer id, operations, bytes, result, ns
 *
 * Every argument is 64 bits (result signed: 0 or -errno).
 */
#ifndef HKV_XFER_PROBE_H
#define HKV_XFER_PROBE_H

#ifndef HKV_NO_PROBES
#define _SDT_HAS_SEMAPHORES 1
#ifndef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT nr
#endif
#include <sys/sdt.h>
#endif

#define XF_SEMA(name)	hugekv_##name##_semaphore
#define XF_SEMA_DECLARE(name) \
	extern volatile unsigned short XF_SEMA(name) __attribute__((visibility("hidden")))

XF_SEMA_DECLARE(xfer_submit);
XF_SEMA_DECLARE(xfer_done);

#ifndef HKV_NO_PROBES
#define XF_PROBE_ON(name)	__builtin_expect(XF_SEMA(name) != 0, 0)
#define xf_probe_submit(pool, peer, pages, ops, bytes) \
	STAP_PROBE5(hugekv, xfer_submit, pool, peer, pages, ops, bytes)
#define xf_probe_done(pool, peer, ops, bytes, result, ns) \
	STAP_PROBE6(hugekv, xfer_done, pool, peer, ops, bytes, result, ns)
#else
#define XF_PROBE_ON(name)	0
#define xf_probe_submit(pool, peer, pages, ops, bytes) \
	((void)(pool), (void)(peer), (void)(pages), (void)(ops), (void)(bytes))
#define xf_probe_done(pool, peer, ops, bytes, result, ns) \
	((void)(pool), (void)(peer), (void)(ops), (void)(bytes), (void)(result), (void)(ns))
#endif

#endif /* HKV_XFER_PROBE_H */
