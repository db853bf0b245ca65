// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sysfs.c - reading and writing sysfs/procfs files, node lists and hugepage
 * pools. Every path goes through ctl_path(), which puts $HKVCTL_ROOT in
 * front: an operator can point hkvctl at a tree captured on another machine,
 * and the tests fake a two-node machine with 1 GiB pages that way.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hkvctl.h"

const char *ctl_root(void)
{
	const char *r = getenv("HKVCTL_ROOT");

	return r && *r ? r : "";
}

bool ctl_fake_root(void)
{
	return *ctl_root() != '\0';
}

const char *ctl_path(char *buf, size_t n, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	len = (size_t)snprintf(buf, n, "%s", ctl_root());
	if (len >= n)
		len = n - 1;
	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
	return buf;
}

/**
 * ctl_read_str() - read a small file, trailing newline stripped
 * @path: the file
 * @buf: output buffer
 * @n: its size
 *
 * Return: bytes read, or -errno.
 */
int ctl_read_str(const char *path, char *buf, size_t n)
{
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	if (r < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return (int)r;
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = '\0';
	return (int)r;
}

int ctl_read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	int r;

	r = ctl_read_str(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/**
 * ctl_write_u64() - write a number to a sysfs file
 * @path: the file
 * @v: the value
 *
 * Return: 0, or -errno (the kernel's answer, e.g. -EACCES or -EINVAL).
 */
int ctl_write_u64(const char *path, uint64_t v)
{
	char buf[32];
	int fd, len, r = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	if (write(fd, buf, (size_t)len) != len)
		r = -errno;
	if (close(fd) && !r)
		r = -errno;
	return r;
}

/**
 * ctl_parse_list() - parse a kernel cpu/node list such as "0-3,8,10-11"
 * @s: the list
 * @out: receives the numbers in order
 * @max: room in @out
 *
 * Return: how many, or -EINVAL, -E2BIG.
 */
int ctl_parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s || a < 0)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a)
				return -EINVAL;
		}
		for (; a <= b; a++) {
			if (n >= max)
				return -E2BIG;
			out[n++] = (int)a;
		}
		s = end;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return n;
}

/**
 * ctl_nodes() - the online NUMA nodes
 * @nodes: receives node numbers
 * @max: room
 *
 * A kernel without NUMA has no node directory: that is one node, 0.
 *
 * Return: the number of nodes, or -errno.
 */
int ctl_nodes(int *nodes, int max)
{
	char p[512], buf[4096];

	if (ctl_read_str(ctl_path(p, sizeof(p), "/sys/devices/system/node/online"),
			 buf, sizeof(buf)) < 0) {
		nodes[0] = 0;
		return 1;
	}
	return ctl_parse_list(buf, nodes, max);
}

bool ctl_node_exists(int node)
{
	char p[512];

	if (node < 0)
		return false;
	ctl_path(p, sizeof(p), "/sys/devices/system/node/node%d", node);
	return access(p, F_OK) == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/**
 * ctl_hp_sizes() - hugepage sizes the kernel offers, smallest first
 * @sizes: receives page sizes in bytes
 * @max: room
 *
 * Read from /sys/kernel/mm/hugepages (the same source libhugetlbfs's
 * gethugepagesizes() uses), so that $HKVCTL_ROOT applies.
 *
 * Return: how many (0 without hugetlb support).
 */
int ctl_hp_sizes(uint64_t *sizes, int max)
{
	char p[512];
	struct dirent *d;
	unsigned long kb;
	DIR *dir;
	int n = 0;

	dir = opendir(ctl_path(p, sizeof(p), "/sys/kernel/mm/hugepages"));
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max)
		if (sscanf(d->d_name, "hugepages-%lukB", &kb) == 1)
			sizes[n++] = (uint64_t)kb << 10;
	closedir(dir);
	qsort(sizes, (size_t)n, sizeof(*sizes), cmp_u64);
	return n;
}

bool ctl_hp_size_supported(uint64_t page_bytes)
{
	uint64_t s[CTL_MAX_SIZES];
	int n = ctl_hp_sizes(s, CTL_MAX_SIZES);

	for (int i = 0; i < n; i++)
		if (s[i] == page_bytes)
			return true;
	return false;
}

/* @node -1: the global pool in /sys/kernel/mm/hugepages */
char *ctl_pool_path(char *buf, size_t n, int node, uint64_t page_bytes,
		    const char *file)
{
	if (node < 0)
		ctl_path(buf, n, "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/%s",
			 page_bytes >> 10, file);
	else
		ctl_path(buf, n, "/sys/devices/system/node/node%d/hugepages/"
			 "hugepages-%" PRIu64 "kB/%s", node, page_bytes >> 10, file);
	return buf;
}

/**
 * ctl_pool_read() - one hugepage pool's counters
 * @node: node, or -1 for the system-wide pool (which also has resv and
 *	overcommit; per-node pools do not)
 * @page_bytes: page size
 * @p: receives the counters
 *
 * Return: 0, or -ENOENT when the kernel has no such pool.
 */
int ctl_pool_read(int node, uint64_t page_bytes, struct ctl_pool *p)
{
	char path[512];
	int r;

	memset(p, 0, sizeof(*p));
	r = ctl_read_u64(ctl_pool_path(path, sizeof(path), node, page_bytes,
				       "nr_hugepages"), &p->total);
	if (r)
		return r;
	ctl_read_u64(ctl_pool_path(path, sizeof(path), node, page_bytes,
				   "free_hugepages"), &p->free);
	ctl_read_u64(ctl_pool_path(path, sizeof(path), node, page_bytes,
				   "surplus_hugepages"), &p->surplus);
	if (node < 0) {
		ctl_read_u64(ctl_pool_path(path, sizeof(path), node, page_bytes,
					   "resv_hugepages"), &p->resv);
		ctl_read_u64(ctl_pool_path(path, sizeof(path), node, page_bytes,
					   "nr_overcommit_hugepages"), &p->overcommit);
	}
	return 0;
}

/**
 * ctl_mem_total() - the memory of a node, or of the machine
 * @node: node, or -1 for the machine (/proc/meminfo)
 * @bytes: receives MemTotal in bytes
 *
 * Return: 0, or -ENOENT when the file or its MemTotal line is missing.
 */
int ctl_mem_total(int node, uint64_t *bytes)
{
	char p[512], buf[8192], *s;
	unsigned long long kb;

	if (node < 0)
		ctl_path(p, sizeof(p), "/proc/meminfo");
	else
		ctl_path(p, sizeof(p), "/sys/devices/system/node/node%d/meminfo", node);
	if (ctl_read_str(p, buf, sizeof(buf)) <= 0 || !(s = strstr(buf, "MemTotal:")) ||
	    sscanf(s, "MemTotal: %llu kB", &kb) != 1)
		return -ENOENT;
	*bytes = (uint64_t)kb << 10;
	return 0;
}
