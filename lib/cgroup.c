// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cgroup.c - the hugetlb cgroup's fault-time limit over this process.
 *
 * A hugetlb cgroup limit (v1 hugetlb.<size>.limit_in_bytes, v2
 * hugetlb.<size>.max; the Kubernetes hugepage limit) is charged when a page
 * is faulted in, not when it is reserved at mmap: a mapping that was never
 * touched can therefore raise SIGBUS later. A prefaulted pool finds that at
 * creation (MADV_POPULATE_WRITE fails); a pool created with
 * HKV_POOL_NO_PREFAULT asks here how much room the limit leaves, on the
 * process's cgroup and every ancestor up to the hierarchy's root.
 */
#include <limits.h>
#include <stdio.h>

#include "internal.h"

struct cg_hier {
	char dir[PATH_MAX];	/* the process's hugetlb cgroup directory */
	size_t root_len;	/* length of the mount point inside dir */
	bool v2;
};

/* the hugetlb hierarchy (v1) or cgroup2 */
static bool cg_mount(const char *type, const char *opts, void *v2)
{
	return *(bool *)v2 ? !strcmp(type, "cgroup2") :
			     !strcmp(type, "cgroup") && strstr(opts, "hugetlb");
}

static int find_mount(bool v2, char *out, size_t len)
{
	return os_find_mount(cg_mount, &v2, out, len);
}

/* the process's cgroup in the hugetlb hierarchy (v1 first, then v2) */
static int find_cgroup(struct cg_hier *h)
{
	char buf[4096], *line, *save = NULL, mnt[PATH_MAX];
	const char *v1 = NULL, *v2 = NULL;
	ssize_t n = os_read_file("/proc/self/cgroup", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		if (!strcmp(c1 + 1, "") && !strncmp(line, "0", 1))
			v2 = c2 + 1;
		else if (strstr(c1 + 1, "hugetlb"))
			v1 = c2 + 1;
	}
	h->v2 = !v1;
	if (!v1 && !v2)
		return -ENOENT;
	if (find_mount(h->v2, mnt, sizeof(mnt)))
		return -ENOENT;
	h->root_len = strlen(mnt);
	snprintf(h->dir, sizeof(h->dir), "%s%s", mnt, v1 ? v1 : v2);
	return 0;
}

/* room under one directory's limit; UINT64_MAX when it sets none */
static uint64_t level_room(const struct cg_hier *h, const char *dir, const char *size)
{
	char path[PATH_MAX + 64], buf[32];
	uint64_t limit, usage;

	snprintf(path, sizeof(path), "%s/hugetlb.%s.%s", dir, size,
		 h->v2 ? "max" : "limit_in_bytes");
	if (os_read_file(path, buf, sizeof(buf)) <= 0 || !strncmp(buf, "max", 3) ||
	    os_read_u64(path, &limit))
		return UINT64_MAX;
	snprintf(path, sizeof(path), "%s/hugetlb.%s.%s", dir, size,
		 h->v2 ? "current" : "usage_in_bytes");
	if (os_read_u64(path, &usage))
		usage = 0;
	return limit > usage ? limit - usage : 0;
}

/**
 * cgroup_hugetlb_room() - bytes of hugepages of a size the process may
 *	still fault in under its hugetlb cgroup's limits
 * @pgsz: HKV_PGSZ_2M or HKV_PGSZ_1G
 *
 * Return: the smallest room over the cgroup and its ancestors, or
 * UINT64_MAX when no limit applies or none can be read.
 */
uint64_t cgroup_hugetlb_room(uint64_t pgsz)
{
	const char *size = pgsz == HKV_PGSZ_1G ? "1GB" : "2MB";
	struct cg_hier h;
	uint64_t room = UINT64_MAX;
	char *slash;

	if (find_cgroup(&h))
		return UINT64_MAX;
	for (;;) {
		room = HKV_MIN(room, level_room(&h, h.dir, size));
		slash = strrchr(h.dir, '/');
		if (!slash || (size_t)(slash - h.dir) < h.root_len)
			break;
		*slash = '\0';
	}
	return room;
}
