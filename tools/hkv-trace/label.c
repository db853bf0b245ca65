// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * label.c - a traced pool's label, from the stats page its process
 * publishes (hkv_page_read()): probes carry pid and pool id only. The page
 * is looked for where the process's user publishes: HUGEKV_RUNTIME_DIR or
 * /run/hugekv, then /run/user/UID/hugekv and /tmp/hugekv-UID. Answers are
 * kept: a label never changes.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <hugekv.h>

#include "hkv-trace.h"

#define LABELS_KEPT	256

static struct {
	uint32_t tgid;
	uint64_t pool;
	char label[HKV_LABEL_MAX];
} kept[LABELS_KEPT];
static unsigned nkept;

static bool page_label(const char *dir, uint32_t tgid, uint64_t pool, char *out)
{
	static struct hkv_page pg;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/pool.%u.%llu.page", dir, tgid, (unsigned long long)pool);
	memset(&pg, 0, sizeof(pg));
	pg.sz = sizeof(pg);
	if (hkv_page_read(path, &pg) || pg.pid != (int)tgid)
		return false;
	memcpy(out, pg.label, HKV_LABEL_MAX);
	return true;
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
	char dir[PATH_MAX], proc[32], label[HKV_LABEL_MAX] = "";
	struct stat sb;
	unsigned i;

	for (i = 0; i < nkept; i++)
		if (kept[i].tgid == tgid && kept[i].pool == pool)
			return kept[i].label;
	snprintf(proc, sizeof(proc), "/proc/%u", tgid);
	if (stat(proc, &sb))
		return "";
	if (!((!hkv_page_dir(dir, sizeof(dir)) && page_label(dir, tgid, pool, label)) ||
	      page_label("/run/hugekv", tgid, pool, label) ||
	      (snprintf(dir, sizeof(dir), "/run/user/%u/hugekv", (unsigned)sb.st_uid),
	       page_label(dir, tgid, pool, label)) ||
	      (snprintf(dir, sizeof(dir), "/tmp/hugekv-%u", (unsigned)sb.st_uid),
	       page_label(dir, tgid, pool, label))))
		return "";	/* not kept: the page may come later */
	i = nkept < LABELS_KEPT ? nkept++ : tgid % LABELS_KEPT;
	kept[i].tgid = tgid;
	kept[i].pool = pool;
	memcpy(kept[i].label, label, sizeof(label));
	return kept[i].label;
}
