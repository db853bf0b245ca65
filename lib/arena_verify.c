// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena_verify.c - check what a prefaulted segment really got.
 *
 * Hugetlb reservations are global, not per node, so a bound segment can
 * still land (partly) elsewhere: move_pages() asks the node of every
 * hugepage (every 2 MiB for THP and 4 KiB segments). The page size comes
 * from the kernel's own account, KernelPageSize in /proc/self/smaps.
 */
#include <fcntl.h>
#include <stdio.h>

#include "internal.h"

#define VERIFY_BATCH	1024
#define SMAPS		"/proc/self/smaps"

/* one line of smaps: a VMA header updates *hit, KernelPageSize the minimum */
static void smaps_line(const char *l, uintptr_t lo, uintptr_t hi, bool *hit, long long *min)
{
	unsigned long long a, b, kb;

	if (sscanf(l, "%llx-%llx ", &a, &b) == 2 && strchr(l, '-') < strchr(l, ' ')) {
		*hit = a < hi && b > lo;
		return;
	}
	if (*hit && sscanf(l, "KernelPageSize: %llu kB", &kb) == 1) {
		if (*min < 0 || (long long)(kb << 10) < *min)
			*min = (long long)(kb << 10);
	}
}

/**
 * arena_verify_smaps() - smallest kernel page size over an address range
 * @addr: start
 * @len: bytes
 *
 * Return: the smallest KernelPageSize (bytes) of the VMAs that overlap the
 * range, -ENOENT if none does, or -errno of the read.
 */
long long arena_verify_smaps(const void *addr, uint64_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len;
	size_t cap = 1 << 16, have = 0;
	long long min = -ENOENT;
	bool hit = false;
	char *buf, *l, *nl;
	ssize_t n;
	int fd;

	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	fd = os->open(SMAPS, O_RDONLY);
	if (fd < 0) {
		min = fd;
		goto free_buf;
	}
	for (;;) {
		n = os->read(fd, buf + have, cap - have);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			min = n;
			break;
		}
		have += n;
		buf[have] = '\0';
		for (l = buf; (nl = strchr(l, '\n')); l = nl + 1) {
			*nl = '\0';
			smaps_line(l, lo, hi, &hit, &min);
		}
		have -= l - buf;	/* keep the partial last line */
		memmove(buf, l, have);
		if (n == 0 || have == cap)
			break;
	}
	os->close(fd);
free_buf:
	free(buf);
	return min;
}

/* node of every stride of the segment: counts pages off the node */
static int check_nodes(struct arena_seg *s, uint64_t stride, int *seen)
{
	void *pages[VERIFY_BATCH];
	int status[VERIFY_BATCH];
	uint64_t off = 0, n, i;

	*seen = -2;
	s->misplaced = 0;
	while (off < s->bytes) {
		n = HKV_MIN((s->bytes - off + stride - 1) / stride, VERIFY_BATCH);
		for (i = 0; i < n; i++)
			pages[i] = s->base + off + i * stride;
		long ret = os->move_pages(0, n, pages, NULL, status, 0);

		if (ret)
			return ret < 0 ? (int)ret : -EIO;
		for (i = 0; i < n; i++) {
			if (status[i] != s->node)
				s->misplaced++;
			if (*seen == -2)
				*seen = status[i];
			else if (*seen != status[i])
				*seen = -1;
		}
		off += n * stride;
	}
	return 0;
}

static int verify_fail(struct hkv_arena *a, struct arena_seg *s, const char *what, int err)
{
	bool strict = a->opts.flags & HKV_POOL_STRICT;

	hkv_log(strict ? HKV_LOG_ERR : HKV_LOG_WARN, "pool %llu node %d: %s%s",
		(unsigned long long)a->pool_id, s->node, what, strict ? " (strict)" : "");
	return strict ? err : 0;
}

static int verify_page_size(struct hkv_arena *a, struct arena_seg *s)
{
	long long got;
	char msg[128];

	if (s->pgsz <= HKV_PGSZ_4K)
		return 0;	/* THP and 4 KiB: smaps says 4 kB either way */
	got = arena_verify_smaps(s->base, s->bytes);
	if (got < 0) {
		snprintf(msg, sizeof(msg), "cannot read %s: %s", SMAPS, strerror((int)-got));
		return verify_fail(a, s, msg, (int)got);
	}
	if ((uint64_t)got == s->pgsz)
		return 0;
	snprintf(msg, sizeof(msg), "KernelPageSize %lld kB, asked for %llu kB", got >> 10,
		 (unsigned long long)(s->pgsz >> 10));
	s->flags |= HKV_REGION_FALLBACK;
	s->pgsz = (uint64_t)got;
	return verify_fail(a, s, msg, -ENOMEM);
}

/**
 * arena_verify() - check the page size and node of a prefaulted segment
 * @a: the arena
 * @s: the segment
 *
 * Sets the segment's verified node (-1 if mixed or unknown), its misplaced
 * page count and HKV_REGION_MISPLACED / HKV_REGION_FALLBACK. A mismatch is
 * reported; with HKV_POOL_STRICT it is an error. Unprefaulted segments
 * (HKV_POOL_NO_PREFAULT) have no pages to ask about: node unknown.
 *
 * Return: 0, or (strict) -ENOMEM for misplaced or smaller pages, or -errno
 * of a query that failed.
 */
int arena_verify(struct hkv_arena *a, struct arena_seg *s)
{
	uint64_t stride = HKV_MAX(s->pgsz, HKV_PGSZ_2M);
	char msg[160];
	int seen, err;

	err = verify_page_size(a, s);
	if (err)
		return err;
	if (a->opts.flags & HKV_POOL_NO_PREFAULT)
		return 0;
	if (!a->topo.numa) {
		s->verified_node = s->node;	/* one node: nowhere else to be */
		return 0;
	}
	err = check_nodes(s, stride, &seen);
	if (err) {
		snprintf(msg, sizeof(msg), "move_pages failed: %s; placement unverified",
			 strerror(-err));
		return verify_fail(a, s, msg, err);
	}
	s->verified_node = seen;
	if (!s->misplaced)
		return 0;
	s->flags |= HKV_REGION_MISPLACED;
	snprintf(msg, sizeof(msg), "%llu of %llu pages not on the node (verified node %d)",
		 (unsigned long long)s->misplaced,
		 (unsigned long long)((s->bytes + stride - 1) / stride), seen);
	return verify_fail(a, s, msg, -ENOMEM);
}
