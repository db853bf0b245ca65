// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * maps.c - parse /proc/PID/smaps (page size, RSS, THP and hugetlb bytes,
 * VmFlags) and /proc/PID/numa_maps (policy, pages per node) and join them
 * by start address.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

static struct map *maps_add(struct maps *ms)
{
	if (ms->n == ms->cap) {
		int cap = ms->cap ? ms->cap * 2 : 64;
		struct map *m = realloc(ms->m, (size_t)cap * sizeof(*m));

		if (!m)
			return NULL;
		ms->m = m;
		ms->cap = cap;
	}
	memset(&ms->m[ms->n], 0, sizeof(ms->m[0]));
	return &ms->m[ms->n++];
}

/* "start-end perms offset dev inode [path]" */
static bool smaps_header(const char *line, struct map *m)
{
	unsigned long long a, b;
	int off = 0;

	if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &a, &b, &off) < 2 || !off)
		return false;
	m->start = a;
	m->end = b;
	ctl_fmt(m->path, sizeof(m->path), "%s", line + off);
	return true;
}

static void smaps_field(const char *line, struct map *m)
{
	unsigned long long kb;

	if (sscanf(line, "KernelPageSize: %llu kB", &kb) == 1)
		m->page_bytes = kb << 10;
	else if (sscanf(line, "Rss: %llu kB", &kb) == 1)
		m->rss = kb << 10;
	else if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
		m->thp_bytes = kb << 10;
	else if (sscanf(line, "Shared_Hugetlb: %llu kB", &kb) == 1 ||
		 sscanf(line, "Private_Hugetlb: %llu kB", &kb) == 1)
		m->hugetlb_bytes += kb << 10;
	else if (!strncmp(line, "VmFlags:", 8)) {
		m->hugetlb = strstr(line, " ht") != NULL;
		m->thp_advised = strstr(line, " hg") != NULL;
		m->dontfork = strstr(line, " dc") != NULL;
	}
}

/* call @fn on each line of /proc/PID/@file, newline stripped, until it
 * returns nonzero (returned) */
static int each_line(int pid, const char *file, int (*fn)(char *line, void *ctx), void *ctx)
{
	char p[512], *line = NULL;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	f = fopen(ctl_path(p, sizeof(p), "/proc/%d/%s", pid, file), "re");
	if (!f)
		return -errno;
	while (!ret && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		ret = fn(line, ctx);
	}
	free(line);
	fclose(f);
	return ret;
}

struct smaps_ctx {
	struct maps *ms;
	struct map *m;		/* the mapping the field lines belong to */
};

static int smaps_line(char *line, void *ctx)
{
	struct smaps_ctx *c = ctx;
	struct map tmp = { 0 };

	if (smaps_header(line, &tmp)) {
		c->m = maps_add(c->ms);
		if (!c->m)
			return -ENOMEM;
		*c->m = tmp;
	} else if (c->m) {
		smaps_field(line, c->m);
	}
	return 0;
}

static int read_smaps(int pid, struct maps *ms)
{
	struct smaps_ctx c = { .ms = ms };

	return each_line(pid, "smaps", smaps_line, &c);
}

static struct map *maps_find(struct maps *ms, uint64_t start)
{
	for (int i = 0; i < ms->n; i++)
		if (ms->m[i].start == start)
			return &ms->m[i];
	return NULL;
}

/* "addr policy tok tok ..." */
static void numa_line(char *line, struct maps *ms)
{
	char *save = NULL, *tok = strtok_r(line, " ", &save);
	unsigned long long v;
	struct map *m;
	int node;

	if (!tok || !(m = maps_find(ms, strtoull(tok, NULL, 16))))
		return;
	tok = strtok_r(NULL, " ", &save);
	if (!tok)
		return;
	ctl_fmt(m->policy, sizeof(m->policy), "%s", tok);
	if ((tok = strrchr(m->policy, ':'))) {
		int r = ctl_parse_list(tok + 1, m->policy_nodes, MAPS_MAX_NODES);

		m->npolicy_nodes = r > 0 ? r : 0;
	}
	while ((tok = strtok_r(NULL, " ", &save))) {
		if (sscanf(tok, "N%d=%llu", &node, &v) == 2 && node >= 0 &&
		    node < MAPS_MAX_NODES)
			m->node_pages[node] = v;
		else if (sscanf(tok, "kernelpagesize_kB=%llu", &v) == 1)
			m->numa_page_bytes = v << 10;
	}
}

static int numa_line_cb(char *line, void *ms)
{
	numa_line(line, ms);
	return 0;
}

static int read_numa_maps(int pid, struct maps *ms)
{
	return each_line(pid, "numa_maps", numa_line_cb, ms);
}

/**
 * maps_read() - a process's mappings with page sizes and nodes
 * @pid: the process
 * @out: receives the mappings; free with maps_free()
 *
 * A kernel without NUMA has no numa_maps: the mappings then carry no policy
 * and no per-node counts.
 *
 * Return: 0, or -errno of smaps (-ENOENT no such process, -EACCES not
 * permitted), -ENOMEM.
 */
int maps_read(int pid, struct maps *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	r = read_smaps(pid, out);
	if (!r) {
		r = read_numa_maps(pid, out);
		if (r == -ENOENT)
			r = 0;
	}
	if (r)
		maps_free(out);
	return r;
}

void maps_free(struct maps *ms)
{
	free(ms->m);
	memset(ms, 0, sizeof(*ms));
}
