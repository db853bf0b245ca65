// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * machine.c - read the machine: nodes, hugepage pools, THP, mounts, memlock,
 * hugetlb cgroup limits, PCI devices with their node.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <hugetlbfs.h>

#include "machine.h"

static void read_node(struct machine_node *n)
{
	char p[512], buf[8192], *line, *save = NULL;
	unsigned long long kb;
	int r;

	ctl_path(p, sizeof(p), "/sys/devices/system/node/node%d/cpulist", n->id);
	if (ctl_read_str(p, n->cpulist, sizeof(n->cpulist)) < 0)
		n->cpulist[0] = '\0';
	r = ctl_parse_list(n->cpulist, n->cpus, MACHINE_MAX_CPUS);
	n->ncpus = r > 0 ? r : 0;

	ctl_path(p, sizeof(p), "/sys/devices/system/node/node%d/meminfo", n->id);
	if (ctl_read_str(p, buf, sizeof(buf)) > 0) {
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			if (sscanf(line, "Node %*d MemTotal: %llu kB", &kb) == 1)
				n->mem_total = (uint64_t)kb << 10;
			else if (sscanf(line, "Node %*d MemFree: %llu kB", &kb) == 1)
				n->mem_free = (uint64_t)kb << 10;
		}
	}
	ctl_path(p, sizeof(p), "/sys/devices/system/node/node%d/distance", n->id);
	if (ctl_read_str(p, buf, sizeof(buf)) > 0) {
		char *s = buf, *end;

		for (n->ndist = 0; n->ndist < MACHINE_MAX_DIST; n->ndist++) {
			long d = strtol(s, &end, 10);

			if (end == s)
				break;
			n->dist[n->ndist] = (int)d;
			s = end;
		}
	}
}

/* no node directory (kernel without NUMA): node 0 is the whole machine */
static void read_meminfo_fallback(struct machine_node *n)
{
	char p[512], buf[8192];
	unsigned long long kb;
	char *s;

	if (n->mem_total || ctl_read_str(ctl_path(p, sizeof(p), "/proc/meminfo"),
					 buf, sizeof(buf)) <= 0)
		return;
	if ((s = strstr(buf, "MemTotal:")) && sscanf(s, "MemTotal: %llu", &kb) == 1)
		n->mem_total = (uint64_t)kb << 10;
	if ((s = strstr(buf, "MemFree:")) && sscanf(s, "MemFree: %llu", &kb) == 1)
		n->mem_free = (uint64_t)kb << 10;
}

static void read_sizes(struct machine *t)
{
	uint64_t s[CTL_MAX_SIZES];
	long lib[CTL_MAX_SIZES];
	int nlib = 0;

	t->nsizes = ctl_hp_sizes(s, CTL_MAX_SIZES);
	for (int k = 0; k < t->nsizes; k++)
		t->size[k].page_bytes = s[k];
	/* libhugetlbfs describes this machine only, not a captured tree */
	if (!ctl_fake_root())
		nlib = gethugepagesizes(lib, CTL_MAX_SIZES);
	for (int k = 0; k < t->nsizes; k++) {
		struct machine_size *z = &t->size[k];

		ctl_pool_read(-1, z->page_bytes, &z->global);
		for (int i = 0; i < nlib; i++)
			if ((uint64_t)lib[i] == z->page_bytes)
				z->libhugetlbfs = true;
		if (z->libhugetlbfs)
			z->mount = hugetlbfs_find_path_for_size((long)z->page_bytes);
		for (int i = 0; i < t->nnodes; i++)
			if (ctl_pool_read(t->node[i].id, z->page_bytes, &t->node[i].pool[k]) &&
			    t->nnodes == 1)
				t->node[i].pool[k] = z->global;
	}
}

/* the bracketed choice of a THP sysfs file */
static void read_thp(const char *file, char *out, size_t n)
{
	char p[512], buf[256], *a, *b;

	ctl_fmt(out, n, "unknown");
	ctl_path(p, sizeof(p), "/sys/kernel/mm/transparent_hugepage/%s", file);
	if (ctl_read_str(p, buf, sizeof(buf)) <= 0)
		return;
	a = strchr(buf, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b) {
		*b = '\0';
		ctl_fmt(out, n, "%s", a + 1);
	}
}

static void cg_add(struct machine *t, const char *dir, const char *path,
		   const char *size, const char *lim, const char *use)
{
	char p[768], buf[64];
	struct machine_cg *c;

	if (t->ncg >= MACHINE_MAX_CG)
		return;
	c = &t->cg[t->ncg];
	memset(c, 0, sizeof(*c));
	ctl_fmt(p, sizeof(p), "%s/hugetlb.%s.%s", dir, size, lim);
	if (ctl_read_str(p, buf, sizeof(buf)) <= 0)
		return;
	ctl_fmt(c->path, sizeof(c->path), "%s", path);
	ctl_fmt(c->size, sizeof(c->size), "%s", size);
	c->limited = strcmp(buf, "max") != 0;
	c->limit = strtoull(buf, NULL, 10);
	/* v1 reports "no limit" as the largest page-aligned number */
	if (c->limit >= (UINT64_MAX >> 2))
		c->limited = false;
	ctl_fmt(p, sizeof(p), "%s/hugetlb.%s.%s", dir, size, use);
	ctl_read_u64(p, &c->usage);
	t->ncg++;
}

/* hugetlb limits of this process's cgroup (v2 or the v1 hugetlb hierarchy) */
static void read_cgroup(struct machine *t)
{
	char p[512], buf[4096], dir[1024], *line, *save = NULL;
	const char *sz[] = { "2MB", "1GB", "64KB", "32MB", "16GB" };

	if (ctl_read_str(ctl_path(p, sizeof(p), "/proc/self/cgroup"), buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctrl = strchr(line, ':'), *path;
		bool v2;

		if (!ctrl || !(path = strchr(ctrl + 1, ':')))
			continue;
		*path++ = '\0';
		*ctrl++ = '\0';
		v2 = !strcmp(line, "0") && !*ctrl;
		if (!v2 && !strstr(ctrl, "hugetlb"))
			continue;
		ctl_path(dir, sizeof(dir), v2 ? "/sys/fs/cgroup%s" : "/sys/fs/cgroup/hugetlb%s",
			 path);
		for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++)
			cg_add(t, dir, path, sz[i], v2 ? "max" : "limit_in_bytes",
			       v2 ? "current" : "usage_in_bytes");
	}
}

/* GPUs (display/3D class 0x03), NICs (0x02, InfiniBand included) and
 * processing accelerators (0x12): what a rank binds next to */
static const char *pci_kind(unsigned long cls)
{
	switch (cls >> 16) {
	case 0x03: return "gpu";
	case 0x02: return "nic";
	case 0x12: return "accel";
	default: return NULL;
	}
}

static void add_ifnames(struct machine_pci *d, const char *dir_path)
{
	struct dirent *e;
	DIR *dir = opendir(dir_path);

	if (!dir)
		return;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.') {
			size_t l = strlen(d->ifname);

			ctl_fmt(d->ifname + l, sizeof(d->ifname) - l, "%s%s",
				l ? "," : "", e->d_name);
		}
	closedir(dir);
}

/* driver, network interfaces and RDMA devices of the function (directly
 * below it, or one level down as with virtio) */
static void pci_names(struct machine_pci *d, const char *dev)
{
	char p[1400], link[512];
	struct dirent *e;
	ssize_t n;
	DIR *dir;

	ctl_fmt(p, sizeof(p), "%s/driver", dev);
	n = readlink(p, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		ctl_fmt(d->driver, sizeof(d->driver), "%s", basename(link));
	}
	ctl_fmt(p, sizeof(p), "%s/net", dev);
	add_ifnames(d, p);
	ctl_fmt(p, sizeof(p), "%s/infiniband", dev);
	add_ifnames(d, p);
	dir = opendir(dev);
	if (!dir)
		return;
	while ((e = readdir(dir)))
		if (!strncmp(e->d_name, "virtio", 6)) {
			ctl_fmt(p, sizeof(p), "%s/%s/net", dev, e->d_name);
			add_ifnames(d, p);
		}
	closedir(dir);
}

static void read_pci(struct machine *t)
{
	char root[512], dev[1024], p[1100], buf[64];
	struct dirent *e;
	DIR *dir;

	dir = opendir(ctl_path(root, sizeof(root), "/sys/bus/pci/devices"));
	if (!dir)
		return;
	while ((e = readdir(dir)) && t->npci < MACHINE_MAX_PCI) {
		struct machine_pci *d = &t->pci[t->npci];
		const char *kind;

		if (e->d_name[0] == '.')
			continue;
		ctl_fmt(dev, sizeof(dev), "%s/%s", root, e->d_name);
		ctl_fmt(p, sizeof(p), "%s/class", dev);
		if (ctl_read_str(p, buf, sizeof(buf)) <= 0 ||
		    !(kind = pci_kind(strtoul(buf, NULL, 16))))
			continue;
		memset(d, 0, sizeof(*d));
		ctl_fmt(d->addr, sizeof(d->addr), "%s", e->d_name);
		ctl_fmt(d->kind, sizeof(d->kind), "%s", kind);
		ctl_fmt(d->class, sizeof(d->class), "%s", buf);
		ctl_fmt(p, sizeof(p), "%s/vendor", dev);
		ctl_read_str(p, d->vendor, sizeof(d->vendor));
		ctl_fmt(p, sizeof(p), "%s/device", dev);
		ctl_read_str(p, d->device, sizeof(d->device));
		ctl_fmt(p, sizeof(p), "%s/numa_node", dev);
		d->node = -1;
		if (ctl_read_str(p, buf, sizeof(buf)) > 0)
			d->node = (int)strtol(buf, NULL, 10);
		pci_names(d, dev);
		t->npci++;
	}
	closedir(dir);
}

static int cmp_pci(const void *a, const void *b)
{
	return strcmp(((const struct machine_pci *)a)->addr, ((const struct machine_pci *)b)->addr);
}

/**
 * machine_read() - read the machine
 * @out: receives the topology; free it with machine_free()
 *
 * Return: 0, or -ENOMEM, or -errno of the node list.
 */
int machine_read(struct machine **out)
{
	int ids[CTL_MAX_NODES], n;
	struct rlimit rl;
	struct machine *t;

	n = ctl_nodes(ids, CTL_MAX_NODES);
	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->node = calloc((size_t)n, sizeof(*t->node));
	if (!t->node) {
		free(t);
		return -ENOMEM;
	}
	t->nnodes = n;
	for (int i = 0; i < n; i++) {
		t->node[i].id = ids[i];
		read_node(&t->node[i]);
	}
	if (n == 1)
		read_meminfo_fallback(&t->node[0]);
	read_sizes(t);
	read_thp("enabled", t->thp_enabled, sizeof(t->thp_enabled));
	read_thp("defrag", t->thp_defrag, sizeof(t->thp_defrag));
	getrlimit(RLIMIT_MEMLOCK, &rl);
	t->memlock_soft = rl.rlim_cur;
	t->memlock_hard = rl.rlim_max;
	read_cgroup(t);
	read_pci(t);
	qsort(t->pci, (size_t)t->npci, sizeof(t->pci[0]), cmp_pci);
	*out = t;
	return 0;
}

void machine_free(struct machine *t)
{
	if (!t)
		return;
	free(t->node);
	free(t);
}

int machine_node_index(const struct machine *t, int node)
{
	for (int i = 0; i < t->nnodes; i++)
		if (t->node[i].id == node)
			return i;
	return -1;
}

static void json_limit(struct json *j, const char *key, uint64_t v)
{
	if (v == RLIM_INFINITY)
		json_i64(j, key, -1);
	else
		json_u64(j, key, v);
}

#define SIZE_F(m, key, t)	JSON_FIELD_AS(struct machine_size, m, key, t)
static const struct json_field size_fields[] = {
	SIZE_F(page_bytes, "page_bytes", JSON_U64), SIZE_F(global.total, "total", JSON_U64),
	SIZE_F(global.free, "free", JSON_U64), SIZE_F(global.resv, "reserved", JSON_U64),
	SIZE_F(global.surplus, "surplus", JSON_U64),
	SIZE_F(global.overcommit, "overcommit", JSON_U64),
	SIZE_F(libhugetlbfs, "libhugetlbfs", JSON_BOOL),
};

static void json_sizes(const struct machine *t, struct json *j)
{
	json_arr(j, "hugepage_sizes");
	for (int k = 0; k < t->nsizes; k++) {
		const struct machine_size *z = &t->size[k];

		json_obj(j, NULL);
		json_fields(j, z, size_fields, JSON_NFIELDS(size_fields));
		json_str(j, "mount", z->mount);
		json_close(j);
	}
	json_close(j);
}

static void json_limits(const struct machine *t, struct json *j)
{
	json_obj(j, "thp");
	json_str(j, "enabled", t->thp_enabled);
	json_str(j, "defrag", t->thp_defrag);
	json_close(j);
	json_obj(j, "memlock");	/* -1 = unlimited */
	json_limit(j, "soft_bytes", t->memlock_soft);
	json_limit(j, "hard_bytes", t->memlock_hard);
	json_close(j);
	json_arr(j, "hugetlb_cgroup");
	for (int i = 0; i < t->ncg; i++) {
		json_obj(j, NULL);
		json_str(j, "path", t->cg[i].path);
		json_str(j, "size", t->cg[i].size);
		if (t->cg[i].limited)
			json_u64(j, "limit_bytes", t->cg[i].limit);
		else
			json_str(j, "limit_bytes", NULL);
		json_u64(j, "usage_bytes", t->cg[i].usage);
		json_close(j);
	}
	json_close(j);
}

#define PCI_F(m, key, t)	JSON_FIELD_AS(struct machine_pci, m, key, t)
static const struct json_field pci_fields[] = {
	PCI_F(addr, "address", JSON_STR), PCI_F(kind, "kind", JSON_STR),
	PCI_F(class, "class", JSON_STR), PCI_F(vendor, "vendor", JSON_STR),
	PCI_F(device, "device", JSON_STR), PCI_F(node, "numa_node", JSON_INT),
	PCI_F(driver, "driver", JSON_STR0), PCI_F(ifname, "interfaces", JSON_STR0),
};

static void json_pci(const struct machine *t, struct json *j)
{
	json_arr(j, "pci");
	for (int i = 0; i < t->npci; i++) {
		const struct machine_pci *d = &t->pci[i];

		json_obj(j, NULL);
		json_fields(j, d, pci_fields, JSON_NFIELDS(pci_fields));
		json_close(j);
	}
	json_close(j);
}

/**
 * machine_json_rest() - the topology JSON after "nodes"
 * @t: the topology
 * @j: the writer, inside the top-level object
 */
void machine_json_rest(const struct machine *t, struct json *j)
{
	json_sizes(t, j);
	json_limits(t, j);
	json_pci(t, j);
}
