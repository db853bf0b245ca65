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

/* which of two pages of one named pool speaks for it: a live one, the
 * longest running process's (so the choice holds while it stays), else
 * the last published */
static bool page_better(const struct hkv_page *a, const struct hkv_page *b)
{
	bool sa = a->flags & HKV_PAGE_STALE, sb = b->flags & HKV_PAGE_STALE;

	if (sa != sb)
		return !sa;
	if (sa)
		return a->published_ns > b->published_ns;
	if (a->pid_start != b->pid_start)
		return a->pid_start < b->pid_start;
	return a->pid < b->pid;
}

/* one entry per named pool: its figures are shared, so one page (the
 * better) gives them; the live publishers' pids are collected. Stale only
 * when every process that published it is gone. */
static void pages_merge(struct ctl_pages *set)
{
	size_t k = 0;

	for (size_t i = 0; i < set->n; i++) {
		struct ctl_page *p = &set->v[i], *q = NULL;
		bool live = !(p->pg.flags & HKV_PAGE_STALE);

		for (size_t j = 0; p->pg.name[0] && j < k && !q; j++)
			if (!strcmp(set->v[j].pg.name, p->pg.name))
				q = &set->v[j];
		if (!q) {
			p->npids = 0;
			if (live)
				p->pids[p->npids++] = p->pg.pid;
			if (k != i)
				set->v[k] = *p;
			k++;
			continue;
		}
		if (live && q->npids < HKV_NAMED_SLOTS)
			q->pids[q->npids++] = p->pg.pid;
		if (page_better(&p->pg, &q->pg)) {
			q->pg = p->pg;
			memcpy(q->file, p->file, sizeof(q->file));
		}
	}
	set->n = k;
}

static int by_int(const void *a, const void *b)
{
	return *(const int *)a < *(const int *)b ? -1 : *(const int *)a > *(const int *)b;
}

/**
 * ctl_pages_read() - read every stats page in a directory
 * @dir: the directory, or NULL for hkv_page_dir()
 * @set: receives the pages, sorted by pid and pool id (ctl_pages_free());
 *	the pages of one named pool (one per attached process) as one entry
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
	pages_merge(set);
	for (size_t i = 0; i < set->n; i++)
		qsort(set->v[i].pids, set->v[i].npids, sizeof(int), by_int);
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
