// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pages.c - the stats pages of every pool on the host (hkv_page_dir(), or
 * --dir), read through hkv_page_read(): what `hkvctl metrics` exports and
 * `hkvctl top` shows. A page is read from its file only: the serving
 * process is never entered.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"

static int by_pool(const void *a, const void *b)
{
	const struct ctl_page *x = a, *y = b;

	if (x->pg.pid != y->pg.pid)
		return x->pg.pid < y->pg.pid ? -1 : 1;
	return x->pg.pool_id < y->pg.pool_id ? -1 : x->pg.pool_id > y->pg.pool_id;
}

static bool page_name(const char *n)
{
	size_t l = strlen(n);

	return l > 5 && !strcmp(n + l - 5, ".page") && n[0] != '.';
}

/* the pool's key in metrics and tables: its name, else PID.ID */
static void page_key(struct ctl_page *p)
{
	if (p->pg.name[0])
		ctl_fmt(p->key, sizeof(p->key), "%s", p->pg.name);
	else
		ctl_fmt(p->key, sizeof(p->key), "%d.%llu", p->pg.pid,
			(unsigned long long)p->pg.pool_id);
}

/**
 * ctl_pages_read() - read every stats page in a directory
 * @dir: the directory, or NULL for hkv_page_dir()
 * @set: receives the pages, sorted by pid and pool id (ctl_pages_free())
 *
 * Pages that vanish meanwhile (their pool was destroyed) are skipped;
 * other unreadable ones are counted in @set->errors.
 *
 * Return: 0, or -errno when the directory cannot be read (-ENOENT: no
 * pool has published there yet; @set is then empty).
 */
int ctl_pages_read(const char *dir, struct ctl_pages *set)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err;

	memset(set, 0, sizeof(*set));
	if (dir)
		ctl_fmt(set->dir, sizeof(set->dir), "%s", dir);
	else if ((err = hkv_page_dir(set->dir, sizeof(set->dir))))
		return err;
	d = opendir(set->dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct ctl_page *p;

		if (!page_name(de->d_name))
			continue;
		if (set->n == set->cap) {
			size_t cap = set->cap ? 2 * set->cap : 16;
			struct ctl_page *v = realloc(set->v, cap * sizeof(*v));

			if (!v) {
				closedir(d);
				return -ENOMEM;
			}
			set->v = v;
			set->cap = cap;
		}
		p = &set->v[set->n];
		memset(p, 0, sizeof(*p));
		p->pg.sz = sizeof(p->pg);
		ctl_fmt(path, sizeof(path), "%s/%s", set->dir, de->d_name);
		err = hkv_page_read(path, &p->pg);
		if (err == -ENOENT)
			continue;
		if (err) {
			set->errors++;
			continue;
		}
		ctl_fmt(p->file, sizeof(p->file), "%s", de->d_name);
		page_key(p);
		set->n++;
	}
	closedir(d);
	qsort(set->v, set->n, sizeof(*set->v), by_pool);
	return 0;
}

void ctl_pages_free(struct ctl_pages *set)
{
	free(set->v);
	memset(set, 0, sizeof(*set));
}

/**
 * ctl_page_figures() - the pool's pages by state, from its snapshot
 * @st: the snapshot
 * @f: receives free, allocated outside units, cached in units, pinned
 */
void ctl_page_figures(const struct hkv_stats *st, struct ctl_states *f)
{
	uint64_t used = st->npages - HKV_MIN_U64(st->free_pages, st->npages);

	f->free = st->free_pages;
	f->pinned = st->pinned_pages;
	f->cached = st->unit_pages - HKV_MIN_U64(st->pinned_pages, st->unit_pages);
	f->allocated = used - HKV_MIN_U64(st->unit_pages, used);
}

/* the oldest pin's age now: its age at publication, plus the time since */
double ctl_page_oldest_pin_s(const struct hkv_page *pg, uint64_t now_real_ns)
{
	double s = (double)pg->stats.oldest_pin_ns / 1e9;

	if (pg->stats.oldest_pin_ns && !(pg->flags & HKV_PAGE_STALE) &&
	    now_real_ns > pg->published_ns)
		s += (double)(now_real_ns - pg->published_ns) / 1e9;
	return s;
}
