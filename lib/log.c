// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * log.c - the library's messages (fallbacks, bad options, broken
 * invariants) and error strings. Messages go to a callback, or to stderr
 * filtered by HUGEKV_LOG; the library never prints on the hot path.
 *
 * The callback may call back into the library, so no library lock is held
 * while it runs: a read lock only keeps hkv_set_log_fn() from returning
 * while another thread still runs the old callback (glibc's default rwlock
 * prefers readers, so a callback that waits on a pool lock cannot stall a
 * message logged under that lock). Messages logged while a pool lock is
 * held are queued per thread (log_hold) and delivered after the release.
 */
#include "internal.h"
#include <limits.h>
#include <stdio.h>

#define LOG_HELD	4	/* messages queued under a pool lock, per thread */
#define LOG_HELD_LEN	512	/* = a message */

static pthread_rwlock_t log_lock = PTHREAD_RWLOCK_INITIALIZER;
static hkv_log_fn log_fn;
static void *log_ctx;

static __thread struct {
	bool in_callback;	/* this thread is running the callback */
	bool pending;		/* hkv_set_log_fn() from inside it */
	hkv_log_fn fn;
	void *ctx;
	unsigned hold, nheld, dropped;
	int level[LOG_HELD];
	char msg[LOG_HELD][LOG_HELD_LEN];
} tl;

/* waits for callbacks running on other threads; from inside the callback
 * the change takes effect when the callback returns */
HKV_API void hkv_set_log_fn(hkv_log_fn fn, void *ctx)
{
	if (tl.in_callback) {
		tl.pending = true;
		tl.fn = fn;
		tl.ctx = ctx;
		return;
	}
	pthread_rwlock_wrlock(&log_lock);
	log_fn = fn;
	log_ctx = ctx;
	pthread_rwlock_unlock(&log_lock);
}

/* HUGEKV_LOG's level (env.c sets it): what goes to stderr without a callback */
static int log_threshold = HKV_LOG_WARN;

/**
 * log_set_level() - the most verbose level written to stderr
 * @level: HKV_LOG_*, or -1 for none
 */
void log_set_level(int level)
{
	HKV_STORE(&log_threshold, level);
}

/**
 * log_level() - the level log_set_level() set
 *
 * Return: HKV_LOG_*, or -1 (quiet).
 */
int log_level(void)
{
	return HKV_LOAD(&log_threshold);
}

static void log_stderr(int level, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };

	if (level <= log_level())
		fprintf(stderr, "hugekv: %s: %s\n", names[level & 3], msg);
}

static void log_deliver(int level, const char *msg)
{
	if (tl.in_callback) {		/* from inside the callback: no recursion */
		log_stderr(level, msg);
		return;
	}
	pthread_rwlock_rdlock(&log_lock);
	if (log_fn) {
		tl.in_callback = true;
		log_fn(log_ctx, level, msg);
		tl.in_callback = false;
	} else {
		log_stderr(level, msg);
	}
	pthread_rwlock_unlock(&log_lock);
	if (tl.pending) {
		tl.pending = false;
		hkv_set_log_fn(tl.fn, tl.ctx);
	}
}

/**
 * hkv_log() - emit one message
 * @level: HKV_LOG_*
 * @fmt: printf format, no trailing newline
 *
 * Between log_hold() and log_release() the message is queued instead.
 */
void hkv_log(int level, const char *fmt, ...)
{
	char msg[LOG_HELD_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (tl.hold) {
		if (tl.nheld == LOG_HELD) {
			tl.dropped++;
			return;
		}
		tl.level[tl.nheld] = level;
		memcpy(tl.msg[tl.nheld++], msg, sizeof(msg));
		return;
	}
	log_deliver(level, msg);
}

HKV_API void hkv_log_message(int level, const char *msg)
{
	if (msg && level >= HKV_LOG_ERR && level <= HKV_LOG_DEBUG)
		hkv_log(level, "%s", msg);
}

/**
 * log_hold() - queue this thread's messages (a pool lock is about to be taken)
 *
 * Nests; each call needs a log_release().
 */
void log_hold(void)
{
	tl.hold++;
}

/**
 * log_release() - end a log_hold(); the outermost delivers what was queued
 */
void log_release(void)
{
	unsigned n, dropped;

	if (--tl.hold)
		return;
	n = tl.nheld;
	dropped = tl.dropped;
	tl.nheld = tl.dropped = 0;
	for (unsigned i = 0; i < n; i++)
		log_deliver(tl.level[i], tl.msg[i]);
	if (dropped)
		hkv_log(HKV_LOG_WARN, "%u more messages dropped", dropped);
}

/**
 * log_fork_child() - in a fork() child: the lock may have been held by a
 * thread the child does not have
 */
void log_fork_child(void)
{
	pthread_rwlock_init(&log_lock, NULL);
}

/* the library's own codes get text that says what they mean here; any
 * other errno (passed through from a system call) gets the system's */
HKV_API const char *hkv_strerror(int err)
{
	const char *s;

	if (err == INT_MIN)		/* -INT_MIN does not exist */
		return "unknown error";
	switch (err < 0 ? -err : err) {
	case 0: return "success";
	case EINVAL: return "invalid argument (bad option, page range, or pages not in the state the call needs)";
	case ENOMEM: return "not enough free pages or memory (hugepage pools: too few free hugepages for the pool; see hkvctl plan)";
	case ENOSPC: return "the answer needs more extents than the caller has room for";
	case EBUSY: return "busy: the unit is pinned, the pages belong to a unit, or processes are attached to the named pool";
	case EEXIST: return "a unit with this id already exists";
	case ENOENT: return "no unit with this id";
	case EUCLEAN: return "allocator invariant broken (hkv_check)";
	case E2BIG: return "too large: a lane may hold at most 2^32-2 pages";
	case EPERM: return "not permitted (locked-memory limit RLIMIT_MEMLOCK, or privileges)";
	case EAGAIN: return "temporarily unavailable (hugepage reservation or cgroup hugetlb limit)";
	case EOVERFLOW: return "counter overflow (too many pins)";
	case EOPNOTSUPP: return "not supported on this machine (page size, THP or NUMA support missing)";
	case EIO: return "memory placement could not be read back (move_pages or smaps)";
	case EDEADLK: return "called from inside this pool's eviction callback (would deadlock)";
	case EBADMSG: return "the unit's bytes differ from the checksum recorded for it";
	case ENODATA: return "no checksum was recorded for the unit (hkv_unit_seal)";
	case EPROTO: return "a named pool's files in a layout this library does not read (another hugekv version), or not a pool's files";
	case EADDRINUSE: return "the named pool's address range is taken in this process (attached already?)";
	case EUSERS: return "every process slot of the named pool is taken";
	case ECHILD: return "the pool was created in another process (before fork()); only hkv_pool_destroy() works here";
	}
	s = strerrordesc_np(err < 0 ? -err : err);
	return s ? s : "unknown error";
}
