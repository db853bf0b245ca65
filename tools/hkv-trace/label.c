// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * label.c - a traced pool's name and label, from the stats page its
 * process publishes (hkv_page_read()): probes carry pid and pool id only.
 * A private pool's page is pool.PID.ID.page; a named pool's is
 * named.NAME.PID.page (one per attached process), found by its pid and
 * pool id. The page is looked for where the process's user publishes:
 * HUGEKV_RUNTIME_DIR or /run/hugekv, then /run/user/UID/hugekv and
 * /tmp/hugekv-UID. Answers are kept: a pool's name and label never change.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <hugekv.h>

#include "hkv-trace.h"

#define LABELS_KEPT	256

struct kept {
	uint32_t tgid;
	uint64_t pool;
	char name[HKV_PAGE_NAME_MAX];
	char label[HKV_LABEL_MAX];
};

static struct kept kept[LABELS_KEPT];
static unsigned nkept;

static bool page_at(const char *path, uint32_t tgid, uint64_t pool, struct kept *out)
{
	static struct hkv_page pg;

	memset(&pg, 0, sizeof(pg));
	pg.sz = sizeof(pg);
	if (hkv_page_read(path, &pg) || pg.pid != (int)tgid || pg.pool_id != pool)
		return false;
	memcpy(out->name, pg.name, sizeof(out->name));
	memcpy(out->label, pg.label, sizeof(out->label));
	return true;
}

/* a named pool's page of process @tgid: named.NAME.TGID.page */
static bool named_page(const char *dir, uint32_t tgid, uint64_t pool, struct kept *out)
{
	char tail[32], path[PATH_MAX];
	struct dirent *de;
	size_t tl, l;
	bool found = false;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	tl = (size_t)snprintf(tail, sizeof(tail), ".%u.page", tgid);
	while (!found && (de = readdir(d))) {
		l = strlen(de->d_name);
		if (l > tl + 6 && !strncmp(de->d_name, "named.", 6) &&
		    !strcmp(de->d_name + l - tl, tail) &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
			found = page_at(path, tgid, pool, out);
	}
	closedir(d);
	return found;
}

static bool page_find(const char *dir, uint32_t tgid, uint64_t pool, struct kept *out)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/pool.%u.%llu.page", dir, tgid, (unsigned long long)pool);
	return page_at(path, tgid, pool, out) || named_page(dir, tgid, pool, out);
}

/* the kept answer for (@tgid, @pool), looked up once found; NULL if none */
static const struct kept *lookup(uint32_t tgid, uint64_t pool)
{
	char dir[PATH_MAX], proc[32];
	struct kept k = { .tgid = tgid, .pool = pool };
	struct stat sb;
	unsigned i;

	for (i = 0; i < nkept; i++)
		if (kept[i].tgid == tgid && kept[i].pool == pool)
			return &kept[i];
	snprintf(proc, sizeof(proc), "/proc/%u", tgid);
	if (stat(proc, &sb))
		return NULL;
	if (!((!hkv_page_dir(dir, sizeof(dir)) && page_find(dir, tgid, pool, &k)) ||
	      page_find("/run/hugekv", tgid, pool, &k) ||
	      (snprintf(dir, sizeof(dir), "/run/user/%u/hugekv", (unsigned)sb.st_uid),
	       page_find(dir, tgid, pool, &k)) ||
	      (snprintf(dir, sizeof(dir), "/tmp/hugekv-%u", (unsigned)sb.st_uid),
	       page_find(dir, tgid, pool, &k))))
		return NULL;	/* not kept: the page may come later */
	i = nkept < LABELS_KEPT ? nkept++ : tgid % LABELS_KEPT;
	kept[i] = k;
	return &kept[i];
}

/**
 * trace_pool_label() - the label of pool @pool of process @tgid
 * @tgid: the process
 * @pool: its pool id (hkv_pool_id())
 *
 * Return: the label, "" if it has none or no page was found.
 */
const char *trace_pool_label(uint32_t tgid, uint64_t pool)
{
	const struct kept *k = lookup(tgid, pool);

	return k ? k->label : "";
}

/**
 * trace_pool_name() - the name of pool @pool of process @tgid
 * @tgid: the process
 * @pool: its pool id in that process
 *
 * Return: the named pool's name, "" for a private pool or no page found.
 */
const char *trace_pool_name(uint32_t tgid, uint64_t pool)
{
	const struct kept *k = lookup(tgid, pool);

	return k ? k->name : "";
}
