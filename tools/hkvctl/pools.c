// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pools.c - `hkvctl pools` (the named pools of this user: size, page size,
 * attached processes, units, free pages, recoveries) and `hkvctl pool rm
 * NAME [--force]`. A pool is read by attaching it for a moment (which also
 * frees the slots of processes that died attached) and detaching; a pool
 * that cannot be attached is listed with the reason (another layout,
 * another owner, creation unfinished). The momentary attach publishes no
 * stats page; the pages the attached processes publish (one each, merged by
 * name: pages.c) are shown with the pool.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hugekv.h>

#include "pages.h"

#define PREFIX	"hugekv."
#define SUFFIX	".meta"

struct pool_row {
	char name[HKV_NAME_MAX + 1];
	int err;			/* attach's, 0 ok */
	struct hkv_named_info info;
	struct hkv_stats st;
	int pids[HKV_NAMED_SLOTS];	/* attached, this command's own left out */
	unsigned npids;
	const struct ctl_page *page;	/* its stats pages merged, or NULL */
};

static const char *named_dir(void)
{
	const char *d = getenv("HUGEKV_NAMED_DIR");

	return d && d[0] ? d : "/dev/shm";
}

/* the pool name of a directory entry, or NULL */
static const char *entry_name(const char *file, char *name, size_t n)
{
	size_t lp = strlen(PREFIX), ls = strlen(SUFFIX), l = strlen(file);

	if (l <= lp + ls || l - lp - ls >= n || strncmp(file, PREFIX, lp) ||
	    strcmp(file + l - ls, SUFFIX))
		return NULL;
	memcpy(name, file + lp, l - lp - ls);
	name[l - lp - ls] = 0;
	return name;
}

static void row_read(struct pool_row *r)
{
	struct hkv_pool *p = NULL;

	r->info.sz = sizeof(r->info);
	r->st.sz = sizeof(r->st);
	r->err = hkv_pool_attach(r->name, 0, &p);
	if (r->err)
		return;
	r->err = hkv_pool_info(p, &r->info);
	if (!r->err)
		r->err = hkv_stats(p, &r->st);
	hkv_pool_destroy(p);
	for (unsigned i = 0; i < r->info.nattached; i++)
		if (r->info.pids[i] != getpid())
			r->pids[r->npids++] = r->info.pids[i];
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct pool_row *)a)->name, ((const struct pool_row *)b)->name);
}

/* every named pool of the directory; *n rows (the caller frees them) */
static int rows_read(struct pool_row **out, size_t *n)
{
	DIR *d = opendir(named_dir());
	struct pool_row *rows = NULL, *more;
	struct dirent *e;
	size_t cap = 0;
	char name[HKV_NAME_MAX + 1];

	*n = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		if (!entry_name(e->d_name, name, sizeof(name)))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			more = realloc(rows, cap * sizeof(*rows));
			if (!more) {
				free(rows);
				closedir(d);
				return -ENOMEM;
			}
			rows = more;
		}
		memset(&rows[*n], 0, sizeof(rows[*n]));
		memcpy(rows[*n].name, name, sizeof(name));
		row_read(&rows[(*n)++]);
	}
	closedir(d);
	if (*n)
		qsort(rows, *n, sizeof(*rows), by_name);
	*out = rows;
	return 0;
}

/* each pool's stats pages (pool="NAME" in hkvctl metrics), if published */
static void rows_pages(struct pool_row *rows, size_t n, const struct ctl_pages *set)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < set->n && !rows[i].page; k++)
			if (!strcmp(set->v[k].pg.name, rows[i].name))
				rows[i].page = &set->v[k];
}

static const char *page_state(const struct pool_row *r)
{
	return !r->page ? "-" : r->page->pg.flags & HKV_PAGE_STALE ? "stale" : "live";
}

static void pools_json(const struct pool_row *rows, size_t n)
{
	struct json j;

	json_begin(&j, stdout);
	json_str(&j, "dir", named_dir());
	json_arr(&j, "pools");
	for (size_t i = 0; i < n; i++) {
		const struct pool_row *r = &rows[i];

		json_obj(&j, NULL);
		json_str(&j, "name", r->name);
		if (r->err) {
			json_i64(&j, "errno", -r->err);
			json_str(&j, "error", hkv_strerror(r->err));
			json_close(&j);
			continue;
		}
		json_u64(&j, "npages", r->info.npages);
		json_u64(&j, "page_bytes", r->info.page_bytes);
		json_u64(&j, "bytes", r->info.npages * r->info.page_bytes);
		json_str(&j, "backing", hkv_backing_name(r->info.backing));
		json_u64(&j, "hugepage_bytes", r->info.hugepage_bytes);
		json_u64(&j, "nlanes", r->info.nlanes);
		json_ints(&j, "pids", r->pids, r->npids);
		json_str(&j, "stats_page", page_state(r));
		json_ints(&j, "page_pids", r->page ? r->page->pids : NULL, r->page ? r->page->npids : 0);
		json_u64(&j, "units", r->st.units);
		json_u64(&j, "unit_pages", r->st.unit_pages);
		json_u64(&j, "pinned_units", r->st.pinned_units);
		json_u64(&j, "free_pages", r->st.free_pages);
		json_u64(&j, "recoveries", r->info.recoveries);
		json_u64(&j, "reclaimed_pages", r->info.reclaimed_pages);
		json_u64(&j, "dropped_pins", r->info.dropped_pins);
		json_u64(&j, "dead_slots", r->info.dead_slots);
		json_u64(&j, "meta_bytes", r->info.meta_bytes);
		json_u64(&j, "layout_version", r->info.layout_version);
		json_close(&j);
	}
	json_close(&j);
	json_end(&j);
}

static void pools_text(const struct pool_row *rows, size_t n)
{
	char sz[32], pg[32];

	printf("%-20s %10s %6s %-5s %7s %10s %10s %9s %5s  %s\n", "NAME", "SIZE", "PAGE", "BACK",
	       "UNITS", "UNIT_PAGES", "FREE", "RECOVERED", "STATS", "ATTACHED");
	for (size_t i = 0; i < n; i++) {
		const struct pool_row *r = &rows[i];

		if (r->err) {
			printf("%-20s (not readable: %s)\n", r->name, hkv_strerror(r->err));
			continue;
		}
		ctl_fmt_size(r->info.npages * r->info.page_bytes, sz, sizeof(sz));
		if (r->info.page_bytes)
			ctl_fmt_size(r->info.page_bytes, pg, sizeof(pg));
		else
			ctl_fmt(pg, sizeof(pg), "index");
		printf("%-20s %10s %6s %-5s %7" PRIu64 " %10" PRIu64 " %10" PRIu64 " %9" PRIu64
		       " %5s ", r->name, r->info.page_bytes ? sz : "-", pg,
		       hkv_backing_name(r->info.backing), r->st.units, r->st.unit_pages,
		       r->st.free_pages, r->info.recoveries, page_state(r));
		for (unsigned k = 0; k < r->npids; k++)
			printf("%s%d", k ? "," : " ", r->pids[k]);
		printf("%s\n", r->npids ? "" : " -");
	}
	if (!n)
		printf("(no named pools in %s)\n", named_dir());
}

static void pools_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl pools [--json]\n"
"\n"
"Lists the named pools in $HUGEKV_NAMED_DIR (default /dev/shm): name, size,\n"
"page size, backing, units and their pages, free pages, recoveries (a process\n"
"died inside a call and the next caller restored the pool) and the attached\n"
"processes. Each pool is attached for a moment to read it, which frees the\n"
"slots of processes that died attached. A pool this library cannot read\n"
"(another layout version, another owner) is listed with the reason. STATS:\n"
"the stats pages its attached processes publish (hkvctl metrics pool=\"NAME\"):\n"
"live, stale (every publisher gone) or - (none).\n"
"\n"
"  --json        one JSON object on stdout\n"
"  -h, --help    this text\n"
"\n"
"Exit status: 0 ok (also with no pools), 1 the directory is unreadable, 2 usage.\n");
}

int cmd_pools(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct pool_row *rows = NULL;
	struct ctl_pages set;
	bool json = false;
	size_t n;
	int c, err;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			pools_usage(stdout);
			return TOOL_OK;
		default:
			pools_usage(stderr);
			return TOOL_USAGE;
		}
	}
	if (ctl_no_operands("pools", argc, argv))
		return TOOL_USAGE;
	setenv("HUGEKV_STATS_INTERVAL_MS", "0", 1);	/* the momentary attach: no page */
	err = rows_read(&rows, &n);
	if (err) {
		ctl_err("pools", "%s: %s", named_dir(), strerror(-err));
		return TOOL_FAIL;
	}
	ctl_pages_read(NULL, &set);	/* none readable: every pool shows "-" */
	rows_pages(rows, n, &set);
	if (json)
		pools_json(rows, n);
	else
		pools_text(rows, n);
	ctl_pages_free(&set);
	free(rows);
	return TOOL_OK;
}

static void pool_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl pool rm NAME [--force] [--json]\n"
"\n"
"Removes the files of the named pool NAME (its units and their bytes go once\n"
"no process is attached). Refused while a live process is attached, unless\n"
"--force: attached processes then keep their mappings until they detach.\n"
"\n"
"  --force       remove while processes are attached\n"
"  --json        one JSON object on stdout\n"
"  -h, --help    this text\n"
"\n"
"Exit status: 0 removed, 1 refused or failed, 2 usage.\n");
}

int cmd_pool(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	bool json = false, force = false;
	const char *name;
	struct json j;
	int c, err;

	while ((c = getopt_long(argc, argv, "fjh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			pool_usage(stdout);
			return TOOL_OK;
		default:
			pool_usage(stderr);
			return TOOL_USAGE;
		}
	}
	if (argc - optind != 2 || strcmp(argv[optind], "rm")) {
		ctl_err("pool", "expected: rm NAME");
		pool_usage(stderr);
		return TOOL_USAGE;
	}
	name = argv[optind + 1];
	err = hkv_pool_unlink_flags(name, force ? HKV_UNLINK_FORCE : 0);
	if (err == -EINVAL) {
		ctl_err("pool", "'%s' is not a pool name", name);
		return TOOL_USAGE;
	}
	if (json) {
		json_begin(&j, stdout);
		json_str(&j, "name", name);
		json_bool(&j, "removed", !err);
		if (err) {
			json_i64(&j, "errno", -err);
			json_str(&j, "error", hkv_strerror(err));
		}
		json_end(&j);
	} else if (!err) {
		printf("removed named pool %s\n", name);
	}
	if (err && !json)
		ctl_err("pool", "rm %s: %s%s", name, hkv_strerror(err),
			err == -EBUSY ? " (--force removes it anyway)" : "");
	return err ? TOOL_FAIL : TOOL_OK;
}
