// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * trace.c - the semaphores of the probes: a leaf, as the kernel's
 * tracepoints are (the rate-limited "frag" probe is the lane's: frag.c).
 */
#include "internal.h"
#include "trace.h"

/* the semaphores of libhugekv's probes (bpf/hugekv_probes.h, CORE rows) */
HKV_PROBE_SEMAPHORES(CORE)
