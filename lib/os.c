// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * os.c - the only file of the library that makes system calls.
 *
 * Every call goes through a table of function pointers (struct os_ops) so
 * tests can replace any of them and inject failures at each call site. One
 * return convention, the library's own: 0 (or a count, a descriptor, a
 * size) on success, -errno on failure; errno is never read above this file.
 */
#include <fcntl.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MOUNTS_MAX	(256 << 10)	/* bytes of /proc/self/mounts read */

/* a system call's -1 + errno as -errno (EIO if errno was not set) */
static long neg_errno(long ret)
{
	return ret < 0 ? (errno ? -errno : -EIO) : ret;
}

static int os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	void *p = mmap(addr, len, prot, flags, fd, off);

	if (p == MAP_FAILED)
		return (int)neg_errno(-1);
	*out = p;
	return 0;
}

static int os_munmap(void *addr, size_t len)
{
	return (int)neg_errno(munmap(addr, len));
}

static int os_madvise(void *addr, size_t len, int advice)
{
	return (int)neg_errno(madvise(addr, len, advice));
}

static int os_mbind(void *addr, unsigned long len, int mode,
		    const unsigned long *nodemask, unsigned long maxnode, unsigned flags)
{
	return (int)neg_errno(mbind(addr, len, mode, nodemask, maxnode, flags));
}

static long os_move_pages(int pid, unsigned long count, void **pages, const int *nodes,
			  int *status, int flags)
{
	return neg_errno(move_pages(pid, count, pages, nodes, status, flags));
}

static int os_open(const char *path, int flags)
{
	return (int)neg_errno(open(path, flags | O_CLOEXEC));
}

static ssize_t os_read(int fd, void *buf, size_t len)
{
	return neg_errno(read(fd, buf, len));
}

static int os_close(int fd)
{
	return (int)neg_errno(close(fd));
}

/* pthread calls return a positive error number */
static int os_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	return -pthread_create(t, NULL, fn, arg);
}

static int os_thread_join(pthread_t t)
{
	return -pthread_join(t, NULL);
}

static int os_set_affinity(const cpu_set_t *set)
{
	return (int)neg_errno(sched_setaffinity(0, sizeof(*set), set));
}

static int os_getrlimit(int resource, struct rlimit *rl)
{
	return (int)neg_errno(getrlimit(resource, rl));
}

static int os_numa_available(void)
{
	return numa_available() < 0 ? -ENOSYS : 0;
}

static int os_numa_max_node(void)
{
	int n = numa_max_node();

	return n < 0 ? -ENOSYS : n;
}

static long long os_node_size(int node)
{
	long long n = numa_node_size64(node, NULL);

	return n < 0 ? -ENOENT : n;
}

static int os_node_cpus(int node, cpu_set_t *set)
{
	struct bitmask *bm = numa_allocate_cpumask();
	unsigned i;
	int ret = 0;

	if (!bm)
		return -ENOMEM;
	CPU_ZERO(set);
	if (numa_node_to_cpus(node, bm) < 0) {
		ret = errno ? -errno : -EINVAL;
		goto free_mask;
	}
	for (i = 0; i < bm->size && i < CPU_SETSIZE; i++)
		if (numa_bitmask_isbitset(bm, i))
			CPU_SET(i, set);
free_mask:
	numa_free_cpumask(bm);
	return ret;
}

static uint64_t os_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int os_futex_wait(int *addr, int val)
{
	if (syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0) < 0)
		return -errno;
	return 0;
}

static int os_futex_wake(int *addr, int n)
{
	long woken = syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);

	return woken < 0 ? -errno : (int)woken;
}

/* a futex in a file several processes map (named pools' locks): a timed
 * wait, so that a waiter can look whether the holder died */
static int os_futex_wait_shared(uint32_t *addr, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull),
			       (long)(timeout_ns % 1000000000ull) };

	if (syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0) < 0)
		return -errno;
	return 0;
}

static int os_futex_wake_shared(uint32_t *addr, int n)
{
	long woken = syscall(SYS_futex, addr, FUTEX_WAKE, n, NULL, NULL, 0);

	return woken < 0 ? -errno : (int)woken;
}

static int os_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0) < 0 ? -errno : 0;
}

/* named pools' files (named.c): never through a symlink */
static int os_open_file(const char *path, int flags, unsigned mode)
{
	return (int)neg_errno(open(path, flags | O_CLOEXEC | O_NOFOLLOW, (mode_t)mode));
}

static int os_fstat(int fd, struct stat *st)
{
	return (int)neg_errno(fstat(fd, st));
}

static int os_ftruncate(int fd, uint64_t len)
{
	return (int)neg_errno(ftruncate(fd, (off_t)len));
}

static int os_fallocate(int fd, uint64_t off, uint64_t len)
{
	return (int)neg_errno(fallocate(fd, 0, (off_t)off, (off_t)len));
}

static ssize_t os_pread(int fd, void *buf, size_t len, uint64_t off)
{
	return neg_errno(pread(fd, buf, len, (off_t)off));
}

static int os_unlink(const char *path)
{
	return (int)neg_errno(unlink(path));
}

static int os_flock(int fd, int op)
{
	return (int)neg_errno(flock(fd, op));
}

static int os_get_mempolicy(int *mode, unsigned long *nodemask, unsigned long maxnode)
{
	return (int)neg_errno(get_mempolicy(mode, nodemask, maxnode, NULL, 0));
}

static int os_set_mempolicy(int mode, const unsigned long *nodemask, unsigned long maxnode)
{
	return (int)neg_errno(set_mempolicy(mode, nodemask, maxnode));
}

const struct os_ops os_default_ops = {
	.mmap = os_mmap,
	.munmap = os_munmap,
	.madvise = os_madvise,
	.mbind = os_mbind,
	.move_pages = os_move_pages,
	.open = os_open,
	.read = os_read,
	.close = os_close,
	.thread_create = os_thread_create,
	.thread_join = os_thread_join,
	.set_affinity = os_set_affinity,
	.getrlimit = os_getrlimit,
	.numa_available = os_numa_available,
	.numa_max_node = os_numa_max_node,
	.node_size = os_node_size,
	.node_cpus = os_node_cpus,
	.now_ns = os_now_ns,
	.futex_wait = os_futex_wait,
	.futex_wake = os_futex_wake,
	.futex_wait_shared = os_futex_wait_shared,
	.futex_wake_shared = os_futex_wake_shared,
	.membarrier = os_membarrier,
	.open_file = os_open_file,
	.fstat = os_fstat,
	.ftruncate = os_ftruncate,
	.fallocate = os_fallocate,
	.pread = os_pread,
	.unlink = os_unlink,
	.flock = os_flock,
	.get_mempolicy = os_get_mempolicy,
	.set_mempolicy = os_set_mempolicy,
};

const struct os_ops *os = &os_default_ops;

/**
 * os_set_ops() - replace the system-call table (tests)
 * @ops: the new table, or NULL for the default one
 *
 * Not thread-safe: call it while no pool is being created or destroyed.
 */
void os_set_ops(const struct os_ops *ops)
{
	os = ops ? ops : &os_default_ops;
}

/**
 * os_find_mount() - the first mount in /proc/self/mounts that @match takes
 * @match: called with each mount's type and options (and @arg)
 * @arg: passed to @match
 * @out: receives the mount point (one that fits in @len)
 * @len: room in @out
 *
 * The one reader of the mount table (cgroup.c: the hugetlb hierarchy;
 * named.c: a hugetlbfs mount of a page size).
 *
 * Return: 0, -ENOENT (none taken), -ENOMEM, or -errno of the read.
 */
int os_find_mount(bool (*match)(const char *type, const char *opts, void *arg), void *arg,
		  char *out, size_t len)
{
	char *buf = malloc(MOUNTS_MAX), *line, *save = NULL;
	ssize_t n;
	int ret = -ENOENT;

	if (!buf)
		return -ENOMEM;
	n = os_read_file("/proc/self/mounts", buf, MOUNTS_MAX);
	for (line = n > 0 ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char dir[PATH_MAX], type[32], opts[512];

		if (sscanf(line, "%*s %4095s %31s %511s", dir, type, opts) != 3 ||
		    strlen(dir) >= len || !match(type, opts, arg))
			continue;
		memcpy(out, dir, strlen(dir) + 1);
		ret = 0;
		break;
	}
	free(buf);
	return n < 0 ? (int)n : ret;
}

/**
 * os_read_file() - read a small sysfs/procfs file
 * @path: the file
 * @buf: receives its start, NUL-terminated
 * @len: room in @buf (> 0)
 *
 * Return: bytes read, or -errno of open/read.
 */
ssize_t os_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n, got = 0;
	int fd, err = 0;

	fd = os->open(path, O_RDONLY);
	if (fd < 0)
		return fd;
	while ((size_t)got < len - 1) {
		n = os->read(fd, buf + got, len - 1 - got);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			err = (int)n;
			break;
		}
		if (n == 0)
			break;
		got += n;
	}
	os->close(fd);
	buf[got] = '\0';
	return err ? err : got;
}

/**
 * os_read_u64() - read one unsigned decimal number from a file
 * @path: the file
 * @out: receives the number
 *
 * Return: 0, -errno of the read, or -EINVAL when the file holds no number.
 */
int os_read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;
	unsigned long long v;
	ssize_t n;

	n = os_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (end == buf || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

/**
 * os_proc_stat() - a process's or thread's state and start time
 * @path: its /proc stat file (/proc/PID/stat, /proc/PID/task/TID/stat)
 * @start: receives field 22, the start time in clock ticks after boot,
 *	when the file could be read
 *
 * A zombie runs no more code: it counts as gone, as one that exited.
 *
 * Return: 1 it runs, 0 it is gone or a zombie, or -errno when the file
 * cannot be read or parsed (-EPROTO), which says nothing either way.
 */
int os_proc_stat(const char *path, uint64_t *start)
{
	char buf[1024], *p, state = 0;
	unsigned long long st = 0;
	ssize_t n;

	n = os_read_file(path, buf, sizeof(buf));
	if (n == -ENOENT || n == -ESRCH)
		return 0;
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')');	/* the command may hold spaces and parens */
	/* after the name: state, then 18 fields, then starttime */
	if (!p || sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
			 "%*s %*s %*s %*s %*s %*s %llu", &state, &st) != 2)
		return -EPROTO;
	*start = st;
	return state == 'Z' || state == 'X' ? 0 : 1;
}

/**
 * os_proc_start() - a running process's start time
 * @pid: the process
 *
 * Return: field 22 of /proc/PID/stat (clock ticks since boot), 0 if the
 * process is gone, a zombie (it runs no more calls) or cannot be read.
 */
uint64_t os_proc_start(int pid)
{
	char path[64];
	uint64_t start = 0;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return os_proc_stat(path, &start) == 1 ? start : 0;
}
