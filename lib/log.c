// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * log.c - the library's messages (fallbacks, bad options, broken
 * invariants) and error strings. Messages go to a callback, or to stderr
 * filtered by HUGEKV_LOG; the library never prints on the hot path.
 */
#include "internal.h"
#include <stdio.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static hkv_log_fn log_fn;
static void *log_ctx;

/**
 * hkv_set_log_fn() - route the library's messages
 * @fn: callback, or NULL for the default (stderr, level from HUGEKV_LOG)
 * @ctx: passed to @fn
 */
HKV_API void hkv_set_log_fn(hkv_log_fn fn, void *ctx)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_ctx = ctx;
	pthread_mutex_unlock(&log_lock);
}

/**
 * hkv_log() - emit one message
 * @level: HKV_LOG_*
 * @fmt: printf format, no trailing newline
 */
void hkv_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_fn)
		log_fn(log_ctx, level, msg);
	else if (level <= env_log_level())
		fprintf(stderr, "hugekv: %s: %s\n", names[level & 3], msg);
	pthread_mutex_unlock(&log_lock);
}

/**
 * hkv_strerror() - describe an error code of this library
 * @err: a negative (or positive) errno
 *
 * Return: a static string.
 */
HKV_API const char *hkv_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return "success";
	case EINVAL: return "invalid argument (bad option, page range, or pages not in the state the call needs)";
	case ENOMEM: return "not enough free pages or memory (hugepage pools: too few free hugepages for the pool; see hkvctl plan)";
	case ENOSPC: return "the answer needs more extents than the caller has room for";
	case EBUSY: return "busy: the unit is pinned, or the pages belong to a unit";
	case EEXIST: return "a unit with this id already exists";
	case ENOENT: return "no unit with this id";
	case EUCLEAN: return "allocator invariant broken (hkv_check)";
	case E2BIG: return "too large: a lane may hold at most 2^32-2 pages";
	case EPERM: return "not permitted (locked-memory limit RLIMIT_MEMLOCK, or privileges)";
	case EAGAIN: return "temporarily unavailable (hugepage reservation or cgroup hugetlb limit)";
	case EOVERFLOW: return "counter overflow (too many pins)";
	case ENODEV: return "no such NUMA node, or the page size is not supported by this machine";
	case EFAULT: return "memory placement or page size not as required (strict pool)";
	case EIO: return "I/O error";
	case ENOTSUP: return "not supported on this machine";
	default: return "unknown error";
	}
}
