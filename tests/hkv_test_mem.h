/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv_test_mem.h - test helpers for memory pools: the kernel's hugepage
 * accounting, page size and node of an address (read independently of the
 * library), log capture, and fault injection through the os layer's table.
 */
#ifndef HKV_TEST_MEM_H
#define HKV_TEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* a field of /proc/meminfo, e.g. "HugePages_Free" (UINT64_MAX if absent) */
uint64_t tm_meminfo(const char *key);
/* HugetlbPages of this process (kB, /proc/self/status): immune to others */
uint64_t tm_hugetlb_kb(void);
/* skip the test when not root; fail it (with a message) when fewer than n
 * 2 MiB hugepages are free and unreserved */
void tm_require_hugepages(uint64_t n);
/* write a distinct word at both ends of every KV page, read all back, and
 * check that page npages has no address */
void tm_check_pages(struct hkv_pool *p, uint64_t npages, uint64_t page_bytes);
/* run fn(arg) in a forked child: it must exit normally (no SIGBUS, no
 * crash) with fn's return value 0; fn returns a step number on failure */
void tm_run_in_child(int (*fn)(void *), void *arg);
/* smallest KernelPageSize over [addr, addr+len) from /proc/self/smaps, or -1 */
long long tm_smaps_page_size(const void *addr, size_t len);
/* number of VMAs of this process with KernelPageSize == kb kB */
unsigned tm_smaps_vmas(unsigned long kb);
/* kB of this process's VMAs with KernelPageSize == kb kB: for hugetlb, its
 * pages whether faulted or only reserved, immune to other processes */
uint64_t tm_smaps_mapped_kb(unsigned long kb);
/* entries of /proc/self/fd (a leaked memfd holds its hugepages unmapped) */
unsigned tm_open_fds(void);
/* node the page at addr is on (move_pages), or -errno */
int tm_node_of(const void *addr);

/* log capture */
struct tm_log {
	unsigned n, warn, err;
	char text[16384];	/* all messages, one per line (truncated) */
};
void tm_log_capture(struct tm_log *l);	/* NULL: back to stderr */
bool tm_log_has(const struct tm_log *l, const char *needle);

/* fault injection: one fault at a time */
enum tm_op {
	TM_MMAP, TM_MUNMAP, TM_MADVISE, TM_MBIND, TM_MOVE_PAGES, TM_OPEN, TM_READ,
	TM_THREAD, TM_AFFINITY, TM_RLIMIT, TM_NODE_CPUS, TM_MEMBARRIER, TM_NOPS
};

struct tm_fault {
	enum tm_op op;
	unsigned nth;		/* fail the nth matching call (1-based); 0 = every one */
	int err;		/* errno to fail with */
	long arg;		/* mmap: flag bits that must be set; madvise: advice;
				 * membarrier: the command; 0 = any (madvise,
				 * membarrier: use -1 for any) */
	const char *path;	/* open/read: substring of the path; NULL = any */
};

void tm_inject(const struct tm_fault *f);
void tm_reset(void);			/* default ops, no fault */
unsigned tm_matched(void);		/* matching calls seen */
unsigned tm_failed(void);		/* calls failed */
/* the injecting table, to build on (copy it, override some entries) */
extern const struct os_ops tm_ops;

#endif /* HKV_TEST_MEM_H */
