// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv_test_mem.c - see tests/hkv_test_mem.h.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
#include <numaif.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

static uint64_t field(const char *file, const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	unsigned long long v = UINT64_MAX;
	FILE *f = fopen(file, "r");

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			sscanf(line + kl + 1, "%llu", &v);
			break;
		}
	fclose(f);
	return v;
}

uint64_t tm_meminfo(const char *key)
{
	return field("/proc/meminfo", key);
}

uint64_t tm_hugetlb_kb(void)
{
	return field("/proc/self/status", "HugetlbPages");
}

void tm_require_hugepages(uint64_t n)
{
	uint64_t fr = tm_meminfo("HugePages_Free"), rs = tm_meminfo("HugePages_Rsvd");

	if (geteuid() != 0) {
		print_message("not root: skipping a test that needs %llu free 2 MiB hugepages\n",
			      (unsigned long long)n);
		skip();
	}
	if (fr == UINT64_MAX || fr - HKV_MIN(rs, fr) < n)
		fail_msg("needs %llu free 2 MiB hugepages, HugePages_Free %llu Rsvd %llu: "
			 "reserve them (scripts/test-env, or echo N > /proc/sys/vm/nr_hugepages)",
			 (unsigned long long)n, (unsigned long long)fr, (unsigned long long)rs);
}

/* write a distinct word at both ends of every KV page, then read all back */
void tm_check_pages(struct hkv_pool *p, uint64_t npages, uint64_t page_bytes)
{
	uint64_t i, *w;

	for (i = 0; i < npages; i++) {
		w = hkv_page_ptr(p, i);
		assert_non_null(w);
		w[0] = i * 7 + 1;
		w[page_bytes / 8 - 1] = ~i;
	}
	for (i = 0; i < npages; i++) {
		w = hkv_page_ptr(p, i);
		assert_int_equal(w[0], i * 7 + 1);
		assert_int_equal(w[page_bytes / 8 - 1], ~i);
	}
	assert_null(hkv_page_ptr(p, npages));
}

void tm_run_in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));		/* no SIGBUS, no crash */
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* walk smaps; for VMAs overlapping [lo, hi) (or all when hi == 0) call fn */
static void smaps_walk(uintptr_t lo, uintptr_t hi, void (*fn)(void *, unsigned long), void *ctx)
{
	char line[512];
	unsigned long long a, b;
	unsigned long kb;
	bool hit = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			hit = !hi || (a < hi && b > lo);
			continue;
		}
		if (hit && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1)
			fn(ctx, kb);
	}
	fclose(f);
}

static void min_kb(void *ctx, unsigned long kb)
{
	long long *m = ctx;

	if (*m < 0 || (long long)kb * 1024 < *m)
		*m = (long long)kb * 1024;
}

long long tm_smaps_page_size(const void *addr, size_t len)
{
	long long m = -1;

	smaps_walk((uintptr_t)addr, (uintptr_t)addr + len, min_kb, &m);
	return m;
}

struct count_ctx {
	unsigned long kb;
	unsigned n;
};

static void count_kb(void *ctx, unsigned long kb)
{
	struct count_ctx *c = ctx;

	c->n += kb == c->kb;
}

unsigned tm_smaps_vmas(unsigned long kb)
{
	struct count_ctx c = { .kb = kb };

	smaps_walk(0, 0, count_kb, &c);
	return c.n;
}

uint64_t tm_smaps_mapped_kb(unsigned long kb)
{
	char line[512];
	unsigned long size = 0, pg;
	uint64_t sum = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Size: %lu kB", &size) == 1)
			continue;	/* the VMA's first field after its range */
		if (sscanf(line, "KernelPageSize: %lu kB", &pg) == 1 && pg == kb)
			sum += size;
	}
	fclose(f);
	return sum;
}

unsigned tm_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int tm_node_of(const void *addr)
{
	void *p = (void *)addr;
	int st = -1;

	if (move_pages(0, 1, &p, NULL, &st, 0))
		return -errno;
	return st;
}

/* ---- log capture ---- */

static void log_cb(void *ctx, int level, const char *msg)
{
	struct tm_log *l = ctx;
	size_t used = strlen(l->text);

	l->n++;
	l->warn += level == HKV_LOG_WARN;
	l->err += level == HKV_LOG_ERR;
	snprintf(l->text + used, sizeof(l->text) - used, "%s\n", msg);
}

void tm_log_capture(struct tm_log *l)
{
	if (l)
		memset(l, 0, sizeof(*l));
	hkv_set_log_fn(l ? log_cb : NULL, l);
}

bool tm_log_has(const struct tm_log *l, const char *needle)
{
	return strstr(l->text, needle) != NULL;
}

/* ---- fault injection ---- */

static pthread_mutex_t tm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tm_fault fault = { .op = TM_NOPS };
static unsigned matched, failed;
static int path_fd = -1;	/* last fd opened on a matching path */

/* count a matching call; true when this one must fail (with -fault.err) */
static bool hit(enum tm_op op, bool match)
{
	bool fail = false;

	pthread_mutex_lock(&tm_lock);
	if (fault.op == op && match) {
		matched++;
		fail = !fault.nth || matched == fault.nth;
		failed += fail;
	}
	pthread_mutex_unlock(&tm_lock);
	return fail;
}

static int f_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	if (hit(TM_MMAP, (flags & fault.arg) == fault.arg))
		return -fault.err;
	return os_default_ops.mmap(addr, len, prot, flags, fd, off, out);
}

static int f_munmap(void *addr, size_t len)
{
	if (hit(TM_MUNMAP, true))
		return -fault.err;
	return os_default_ops.munmap(addr, len);
}

static int f_madvise(void *addr, size_t len, int advice)
{
	if (hit(TM_MADVISE, fault.arg == -1 || fault.arg == advice))
		return -fault.err;
	return os_default_ops.madvise(addr, len, advice);
}

static int f_mbind(void *addr, unsigned long len, int mode, const unsigned long *mask,
		    unsigned long maxnode, unsigned flags)
{
	if (hit(TM_MBIND, true))
		return -fault.err;
	return os_default_ops.mbind(addr, len, mode, mask, maxnode, flags);
}

static long f_move_pages(int pid, unsigned long count, void **pages, const int *nodes,
			 int *status, int flags)
{
	if (hit(TM_MOVE_PAGES, true))
		return -fault.err;
	return os_default_ops.move_pages(pid, count, pages, nodes, status, flags);
}

static bool path_match(const char *path)
{
	return !fault.path || strstr(path, fault.path);
}

static int f_open(const char *path, int flags)
{
	int fd;

	if (hit(TM_OPEN, path_match(path)))
		return -fault.err;
	fd = os_default_ops.open(path, flags);
	if (fd >= 0 && fault.op == TM_READ && path_match(path))
		path_fd = fd;
	return fd;
}

static ssize_t f_read(int fd, void *buf, size_t len)
{
	if (hit(TM_READ, fd == path_fd))
		return -fault.err;
	return os_default_ops.read(fd, buf, len);
}

static int f_close(int fd)
{
	if (fd == path_fd)
		path_fd = -1;
	return os_default_ops.close(fd);
}

static int f_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	if (hit(TM_THREAD, true))
		return -fault.err;
	return os_default_ops.thread_create(t, fn, arg);
}

static int f_set_affinity(const cpu_set_t *set)
{
	if (hit(TM_AFFINITY, true))
		return -fault.err;
	return os_default_ops.set_affinity(set);
}

static int f_getrlimit(int res, struct rlimit *rl)
{
	if (hit(TM_RLIMIT, true))
		return -fault.err;
	return os_default_ops.getrlimit(res, rl);
}

static int f_node_cpus(int node, cpu_set_t *set)
{
	if (hit(TM_NODE_CPUS, true))
		return -fault.err;
	return os_default_ops.node_cpus(node, set);
}

static int p_thread_join(pthread_t t)
{
	return os_default_ops.thread_join(t);
}

static int p_numa_available(void)
{
	return os_default_ops.numa_available();
}

static int p_numa_max_node(void)
{
	return os_default_ops.numa_max_node();
}

static long long p_node_size(int node)
{
	return os_default_ops.node_size(node);
}

static uint64_t p_now_ns(void)
{
	return os_default_ops.now_ns();
}

static int p_futex_wait(int *addr, int val)
{
	return os_default_ops.futex_wait(addr, val);
}

static int p_futex_wake(int *addr, int n)
{
	return os_default_ops.futex_wake(addr, n);
}

static int f_membarrier(int cmd)
{
	if (hit(TM_MEMBARRIER, fault.arg == -1 || fault.arg == cmd))
		return -fault.err;
	return os_default_ops.membarrier(cmd);
}

const struct os_ops tm_ops = {
	.mmap = f_mmap,
	.munmap = f_munmap,
	.madvise = f_madvise,
	.mbind = f_mbind,
	.move_pages = f_move_pages,
	.open = f_open,
	.read = f_read,
	.close = f_close,
	.thread_create = f_thread_create,
	.thread_join = p_thread_join,
	.set_affinity = f_set_affinity,
	.getrlimit = f_getrlimit,
	.numa_available = p_numa_available,
	.numa_max_node = p_numa_max_node,
	.node_size = p_node_size,
	.node_cpus = f_node_cpus,
	.now_ns = p_now_ns,
	.futex_wait = p_futex_wait,
	.futex_wake = p_futex_wake,
	.membarrier = f_membarrier,
};

void tm_inject(const struct tm_fault *f)
{
	pthread_mutex_lock(&tm_lock);
	fault = *f;
	matched = failed = 0;
	path_fd = -1;
	pthread_mutex_unlock(&tm_lock);
	os_set_ops(&tm_ops);
}

void tm_reset(void)
{
	struct tm_fault none = { .op = TM_NOPS };

	tm_inject(&none);
	os_set_ops(NULL);
}

unsigned tm_matched(void)
{
	return matched;
}

unsigned tm_failed(void)
{
	return failed;
}
