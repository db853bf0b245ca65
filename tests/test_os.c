// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_os.c - the os layer: the default table makes real system calls,
 * os_set_ops() swaps the table and NULL restores it, and the small-file
 * readers (os_read_file, os_read_u64) on real sysfs/procfs files, on
 * missing files, on short buffers, on garbage and on injected open/read
 * failures (the descriptor is closed either way).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

static void t_default_ops(void **state)
{
	struct rlimit rl;
	cpu_set_t set;
	uint64_t t0, t1;
	char *p = NULL;
	int fd;

	(void)state;
	assert_ptr_equal(os, &os_default_ops);
	/* one convention: 0 or a count/descriptor, -errno on failure */
	assert_int_equal(os->mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, (void **)&p), 0);
	assert_non_null(p);
	assert_int_equal(os->mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
				  (void **)&p), -EINVAL);
	assert_int_equal(os->madvise(p, 1 << 20, 12345), -EINVAL);
	assert_int_equal(os->open("/nonexistent/hugekv", 0), -ENOENT);
	fd = os->open("/proc/self/status", 0);
	assert_true(fd >= 0);
	assert_int_equal(os->read(-1, &fd, 1), -EBADF);
	assert_int_equal(os->close(fd), 0);
	assert_int_equal(os->close(fd), -EBADF);
	assert_int_equal(os->munmap((void *)1, 4096), -EINVAL);
	assert_int_equal(os->madvise(p, 1 << 20, MADV_POPULATE_WRITE), 0);
	p[0] = 1;
	assert_int_equal(os->munmap(p, 1 << 20), 0);
	assert_int_equal(os->getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	assert_true(os->numa_available() >= 0);
	assert_true(os->numa_max_node() >= 0);
	assert_true(os->node_size(0) > 0);
	assert_true(os->node_size(4000) < 0);
	assert_int_equal(os->node_cpus(0, &set), 0);
	assert_int_equal(CPU_COUNT(&set), sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(os->node_cpus(4000, &set) < 0);
	t0 = os->now_ns();
	t1 = os->now_ns();
	assert_true(t1 >= t0 && t0 > 0);
}

static void *ret_arg(void *arg)
{
	return arg;
}

static void t_threads(void **state)
{
	pthread_t t;
	cpu_set_t set;

	(void)state;
	assert_int_equal(os->thread_create(&t, ret_arg, NULL), 0);
	assert_int_equal(os->thread_join(t), 0);
	assert_int_equal(os->node_cpus(0, &set), 0);
	assert_int_equal(os->thread_create(&t, ret_arg, NULL), 0);
	assert_int_equal(os->thread_join(t), 0);
}

static void t_set_ops(void **state)
{
	struct tm_fault f = { TM_MADVISE, 0, EPERM, -1 };

	(void)state;
	tm_inject(&f);
	assert_ptr_equal(os, &tm_ops);
	assert_int_equal(os->madvise(NULL, 0, MADV_NORMAL), -EPERM);
	assert_int_equal(tm_failed(), 1);
	os_set_ops(NULL);
	assert_ptr_equal(os, &os_default_ops);
	tm_reset();
}

static void t_read_file(void **state)
{
	char buf[256], tiny[4];
	uint64_t v;

	(void)state;
	assert_true(os_read_file("/proc/self/status", buf, sizeof(buf)) > 0);
	assert_true(strncmp(buf, "Name:", 5) == 0);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);		/* truncated */
	assert_int_equal(os_read_file("/proc/self/status", tiny, sizeof(tiny)), 3);
	assert_string_equal(tiny, "Nam");
	assert_int_equal(os_read_file("/nonexistent/hugekv", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(os_read_u64("/proc/sys/vm/nr_hugepages", &v), 0);
	assert_int_equal(os_read_u64("/proc/self/status", &v), -EINVAL);	/* not a number */
	assert_int_equal(os_read_u64("/nonexistent/hugekv", &v), -ENOENT);
}

static void t_read_file_faults(void **state)
{
	struct tm_fault fo = { TM_OPEN, 0, EACCES, 0, "status" };
	struct tm_fault fr = { TM_READ, 1, EIO, 0, "status" };
	char buf[64];
	uint64_t v;
	int fd0, fd1;

	(void)state;
	fd0 = open("/dev/null", O_RDONLY);
	close(fd0);
	tm_inject(&fo);
	assert_int_equal(os_read_file("/proc/self/status", buf, sizeof(buf)), -EACCES);
	assert_int_equal(os_read_u64("/proc/self/status", &v), -EACCES);
	tm_inject(&fr);
	assert_int_equal(os_read_file("/proc/self/status", buf, sizeof(buf)), -EIO);
	assert_string_equal(buf, "");
	tm_reset();
	fd1 = open("/dev/null", O_RDONLY);	/* no descriptor leaked */
	close(fd1);
	assert_int_equal(fd0, fd1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_default_ops),
		cmocka_unit_test(t_threads),
		cmocka_unit_test(t_set_ops),
		cmocka_unit_test(t_read_file),
		cmocka_unit_test(t_read_file_faults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
