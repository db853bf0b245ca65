// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xfer-fixture.c - a libhugekv-xfer.so for the tracing tests: the two
 * transfer probes of bpf/hugekv_probes.h (xfer_submit, xfer_done), fired
 * through lib/trace.h exactly as the transfer library fires them, with
 * the arguments the caller gives. It moves no bytes: it tests hkv-trace's
 * side (finding the library in a process, attaching, per-peer counters,
 * stragglers, failures), not transfers.
 */
#include <stdint.h>

#define unlikely(x)	__builtin_expect(!!(x), 0)
#include "../../lib/trace.h"

HKV_PROBE_SEMAPHORES(XFER)

__attribute__((visibility("default")))
void fixture_xfer(uint64_t pool, uint64_t peer, uint64_t pages, uint64_t ops, uint64_t bytes,
		  int64_t result, uint64_t ns)
{
	hkv_probe_xfer_submit(pool, peer, pages, ops, bytes);
	hkv_probe_xfer_done(pool, peer, ops, bytes, result, ns);
}
