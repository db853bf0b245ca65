// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * statpage.c - a pool's stats page: one small file per pool under the
 * runtime directory (hkv_page_dir()), mode 0600, that another process (an
 * exporter, hkvctl top) reads without entering the serving process and
 * without root. A named pool has one per attached process (its create or
 * attach starts it): each page one writer, stale on its own; readers
 * report a name's pages as one pool.
 *
 * Layout: a header written once (who publishes: pid and the process's start
 * time, pool id, name, label), a sequence count, then the figures: the
 * pool's struct hkv_stats and struct hkv_page_xfer. A publication makes the
 * count odd, writes the figures, makes it even again; a reader that finds
 * the count odd or changed across its copy copies again (a seqlock), so it
 * gets one publication's figures and never blocks the writer.
 *
 * Cadence: a thread of the pool publishes every HUGEKV_STATS_INTERVAL_MS
 * (default 1000, 0: no page) through hkv_stats(), which the allocation and
 * free paths never see: they keep their counters as before. The file is
 * created under a temporary name and renamed into place, so a reader never
 * finds a page without its header; hkv_pool_destroy() removes it. A page
 * whose process died (kill -9) stays, and readers report it stale.
 *
 * The page is a view, not part of the memory path: its system calls are
 * made directly, not through the os table, so that failures injected there
 * for the arena are not spent on it, and a page that cannot be made costs a
 * warning, never the pool.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define PAGE_MAGIC	0x7370766b65677568ull	/* "hugekvps" */
#define PAGE_VERSION	1
#define PAGE_DEF_MS	1000
#define PAGE_MAX_MS	3600000ul
#define PAGE_TRIES	1000	/* reader copies before -EAGAIN */
/* the first layout of struct hkv_page: its xfer up to the peers */
#define PAGE_SZ0	(offsetof(struct hkv_page, xfer) + HKV_PAGE_XFER_SZ0)

/* the file: written once up to seq, the rest per publication */
struct page_hdr {
	uint64_t magic;
	uint32_t version, hdr_bytes;	/* hdr_bytes: where the stats start */
	uint32_t stats_bytes, xfer_bytes;
	int32_t pid;
	uint32_t pad;
	uint64_t pid_start, pool_id, created_ns, interval_ns;
	double free_room_low, free_room_high;
	char name[HKV_PAGE_NAME_MAX];
	char label[HKV_LABEL_MAX];
	uint64_t seq;			/* odd while a publication writes */
	uint64_t published_ns, publishes;
};

struct statpage {
	struct page_hdr *hdr;		/* the shared mapping */
	size_t bytes;
	char path[PATH_MAX];
	uint64_t interval_ns;
	pthread_mutex_t lock;		/* one writer at a time; xfer */
	pthread_cond_t wake;
	bool stop, thread;
	pthread_t tid;
	uint64_t last_ns;		/* snapshot time of the last publication */
	struct hkv_page_xfer xfer;
	struct hkv_stats st;		/* the publisher's snapshot buffer */
};

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

HKV_API int hkv_page_dir(char *buf, size_t len)
{
	const char *s = getenv("HUGEKV_RUNTIME_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (!buf || !len)
		return -EINVAL;
	if (s && *s)
		n = snprintf(buf, len, "%s", s);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/hugekv");
	else if (xdg && *xdg == '/')
		n = snprintf(buf, len, "%s/hugekv", xdg);
	else
		n = snprintf(buf, len, "/tmp/hugekv-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* make the directory (or accept it): ours, not writable by others */
static int page_mkdir(const char *dir)
{
	struct stat sb;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &sb))
		return -errno;
	if (!S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 0022))
		return -EPERM;
	return 0;
}

/* pool.PID.ID for a private pool; named.NAME.PID for a named one: every
 * attached process publishes its own page of the shared pool, so that no
 * two processes write one file and each page has one writer to go stale */
static int page_file(const struct hkv_pool *pool, const char *dir, char *buf, size_t len)
{
	char name[HKV_PAGE_NAME_MAX];
	const char *n = pool->opts.name;
	size_t i;
	int k;

	if (n && *n) {
		for (i = 0; n[i] && i < sizeof(name) - 1; i++)	/* a file name, whatever it holds */
			name[i] = (n[i] == '/' || (unsigned char)n[i] < 0x20) ? '_' : n[i];
		name[i] = 0;
		k = snprintf(buf, len, "%s/named.%s.%d.page", dir, name, (int)getpid());
	} else {
		k = snprintf(buf, len, "%s/pool.%d.%llu.page", dir, (int)getpid(),
			     (unsigned long long)pool->id);
	}
	return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : 0;
}

static void page_header(struct page_hdr *h, const struct hkv_pool *pool, uint64_t interval)
{
	h->magic = PAGE_MAGIC;
	h->version = PAGE_VERSION;
	h->hdr_bytes = sizeof(*h);
	h->stats_bytes = sizeof(struct hkv_stats);
	h->xfer_bytes = sizeof(struct hkv_page_xfer);
	h->pid = (int32_t)getpid();
	h->pid_start = os_proc_start(h->pid);
	h->pool_id = pool->id;
	h->created_ns = realtime_ns();
	h->interval_ns = interval;
	h->free_room_low = pool->opts.free_room_low;
	h->free_room_high = pool->opts.free_room_high;
	if (pool->opts.name)
		snprintf(h->name, sizeof(h->name), "%s", pool->opts.name);
	/* a named pool's label defaults to its name (an attacher has none) */
	snprintf(h->label, sizeof(h->label), "%s", hkv_pool_label(pool)[0] || !pool->opts.name ?
		 hkv_pool_label(pool) : pool->opts.name);
}

static void page_sweep(const char *dir, const char *name);

/* the file, made under a temporary name and renamed into place */
static int page_map(struct statpage *pg, const struct hkv_pool *pool)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 8];
	void *m;
	int fd, err;

	err = hkv_page_dir(dir, sizeof(dir));
	if (!err)
		err = page_mkdir(dir);
	if (!err)
		err = page_file(pool, dir, pg->path, sizeof(pg->path));
	if (err)
		return err;
	if (pool->opts.name)	/* pages of this pool's processes that died */
		page_sweep(dir, pool->opts.name);
	snprintf(tmp, sizeof(tmp), "%s.new", pg->path);
	unlink(tmp);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	pg->bytes = HKV_ROUND_UP(sizeof(struct page_hdr) + sizeof(struct hkv_stats) +
				 sizeof(struct hkv_page_xfer), 4096);
	if (ftruncate(fd, (off_t)pg->bytes)) {
		err = -errno;
		goto unlink_tmp;
	}
	m = mmap(NULL, pg->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		goto unlink_tmp;
	}
	pg->hdr = m;
	page_header(pg->hdr, pool, pg->interval_ns);
	if (rename(tmp, pg->path)) {
		err = -errno;
		munmap(m, pg->bytes);
		pg->hdr = NULL;
		goto unlink_tmp;
	}
	close(fd);
	return 0;

unlink_tmp:
	unlink(tmp);
	close(fd);
	return err;
}

/* write one snapshot into the page (pg->lock held) */
static void page_write(struct statpage *pg, const struct hkv_stats *st, uint64_t now)
{
	struct page_hdr *h = pg->hdr;
	char *body = (char *)h + h->hdr_bytes;
	/* odd before any figure: an acquiring read-modify-write keeps the
	 * stores after it (a full barrier on x86) */
	uint64_t seq = __atomic_fetch_add(&h->seq, 1, __ATOMIC_ACQ_REL);

	memcpy(body, st, sizeof(*st));
	memcpy(body + h->stats_bytes, &pg->xfer, sizeof(pg->xfer));
	h->published_ns = now;
	h->publishes++;
	__atomic_store_n(&h->seq, seq + 2, __ATOMIC_RELEASE);
}

/* a snapshot, then the write; an older snapshot than the page's is dropped */
static int page_publish(struct hkv_pool *pool, struct statpage *pg)
{
	struct hkv_stats *st = calloc(1, sizeof(*st));
	uint64_t now;
	int err;

	if (!st)
		return -ENOMEM;
	st->sz = sizeof(*st);
	now = realtime_ns();
	err = hkv_stats(pool, st);
	if (!err) {
		pthread_mutex_lock(&pg->lock);
		if (now >= pg->last_ns) {
			page_write(pg, st, now);
			pg->last_ns = now;
		}
		pthread_mutex_unlock(&pg->lock);
	}
	free(st);
	return err;
}

static void *page_thread(void *arg)
{
	struct hkv_pool *pool = arg;
	struct statpage *pg = pool->page;
	struct timespec ts;

	pthread_mutex_lock(&pg->lock);
	while (!pg->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(pg->interval_ns / 1000000000ull);
		ts.tv_nsec += (long)(pg->interval_ns % 1000000000ull);
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000l;
		}
		while (!pg->stop && pthread_cond_timedwait(&pg->wake, &pg->lock, &ts) != ETIMEDOUT)
			;
		if (pg->stop)
			break;
		pthread_mutex_unlock(&pg->lock);
		page_publish(pool, pg);
		pthread_mutex_lock(&pg->lock);
	}
	pthread_mutex_unlock(&pg->lock);
	return NULL;
}

/* HUGEKV_STATS_INTERVAL_MS, read at each create: ns, 0 = no page */
static uint64_t page_interval(void)
{
	const char *s = getenv("HUGEKV_STATS_INTERVAL_MS");
	unsigned long v;

	if (!s)
		return PAGE_DEF_MS * 1000000ull;
	if (env_parse_uint(s, PAGE_MAX_MS, &v)) {
		hkv_log(HKV_LOG_WARN, "HUGEKV_STATS_INTERVAL_MS=%s: ignored (0..%lu)", s,
			PAGE_MAX_MS);
		return PAGE_DEF_MS * 1000000ull;
	}
	return v * 1000000ull;
}

static int page_clock_cond(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int err;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	err = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return -err;
}

/**
 * statpage_start() - publish a new pool's stats page and start its thread
 * @pool: the pool, fully created
 *
 * Without a page (HUGEKV_STATS_INTERVAL_MS=0, or the directory or file
 * could not be made: logged) the pool works as before.
 */
void statpage_start(struct hkv_pool *pool)
{
	struct statpage *pg;
	uint64_t interval = page_interval();
	int err;

	if (!interval)
		return;
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return;
	pg->interval_ns = interval;
	err = page_map(pg, pool);
	if (err) {
		hkv_log(HKV_LOG_WARN, "pool %llu: no stats page: %s",
			(unsigned long long)pool->id, strerror(-err));
		free(pg);
		return;
	}
	pthread_mutex_init(&pg->lock, NULL);
	page_clock_cond(&pg->wake);
	pool->page = pg;
	page_publish(pool, pg);
	if (pthread_create(&pg->tid, NULL, page_thread, pool))
		hkv_log(HKV_LOG_WARN, "pool %llu: stats page published at create only",
			(unsigned long long)pool->id);
	else
		pg->thread = true;
}

/**
 * statpage_stop() - stop the thread, remove the page (pool destroy)
 * @pool: the pool
 *
 * In a fork() child the thread is not there and the page is the parent's:
 * only the mapping and the bookkeeping go.
 */
void statpage_stop(struct hkv_pool *pool)
{
	struct statpage *pg = pool->page;

	if (!pg)
		return;
	if (!pool_forked(pool)) {
		if (pg->thread) {
			pthread_mutex_lock(&pg->lock);
			pg->stop = true;
			pthread_cond_signal(&pg->wake);
			pthread_mutex_unlock(&pg->lock);
			pthread_join(pg->tid, NULL);
		}
		unlink(pg->path);
		pthread_cond_destroy(&pg->wake);
		pthread_mutex_destroy(&pg->lock);
	}
	munmap(pg->hdr, pg->bytes);
	free(pg);
	pool->page = NULL;
}

HKV_API int hkv_stats_publish(struct hkv_pool *pool)
{
	if (!pool)
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	if (res_in_callback(pool))
		return -EDEADLK;
	if (!pool->page)
		return -ENOENT;
	return page_publish(pool, pool->page);
}

HKV_API int hkv_page_set_xfer(struct hkv_pool *pool, const struct hkv_page_xfer *x)
{
	struct statpage *pg;

	if (!pool || !x || x->sz < HKV_PAGE_XFER_SZ0 || x->npeers > HKV_PAGE_XFER_PEERS)
		return -EINVAL;
	pg = pool->page;
	if (!pg || pool_forked(pool))
		return -ENOENT;
	pthread_mutex_lock(&pg->lock);
	/* a caller of an older layout: the fields it does not know read 0 */
	memset(&pg->xfer, 0, sizeof(pg->xfer));
	memcpy(&pg->xfer, x, HKV_MIN(x->sz, sizeof(pg->xfer)));
	/* the layout filled, for readers: a newer library under an older
	 * transfer library leaves the figures that one lacks absent, not 0 */
	pg->xfer.sz = HKV_MIN(x->sz, sizeof(pg->xfer));
	pthread_mutex_unlock(&pg->lock);
	return 0;
}

HKV_API const char *hkv_pool_label(const struct hkv_pool *pool)
{
	return pool && pool->label ? pool->label : "";
}

/* ---- readers ------------------------------------------------------------ */

/* gone, a zombie (it publishes no more), or its pid now another process's */
static bool page_stale(const struct page_hdr *h)
{
	char path[64];
	uint64_t start = 0;
	int r;

	if (h->pid <= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", h->pid);
	r = os_proc_stat(path, &start);
	if (r < 0)	/* /proc unreadable here: by the signal test alone */
		return kill(h->pid, 0) && errno == ESRCH;
	return !r || (h->pid_start && start != h->pid_start);
}

/* one consistent copy of the file into buf: the count read around it */
static int page_copy(int fd, char *buf, size_t len)
{
	const struct page_hdr *h = (const struct page_hdr *)buf;
	uint64_t s;

	for (int i = 0; i < PAGE_TRIES; i++) {
		/* two system calls: the second reads after the first */
		if (pread(fd, buf, len, 0) != (ssize_t)len)
			return -EPROTO;
		if (pread(fd, &s, sizeof(s), offsetof(struct page_hdr, seq)) != sizeof(s))
			return -EPROTO;
		if (!(s & 1) && s == h->seq)
			return 0;
		sched_yield();
	}
	return -EAGAIN;
}

static int page_check(const struct page_hdr *h, size_t size)
{
	if (h->magic != PAGE_MAGIC || h->version != PAGE_VERSION ||
	    h->hdr_bytes < sizeof(*h) || h->stats_bytes < HKV_STATS_SZ0 ||
	    h->stats_bytes > 65536 || h->xfer_bytes > 65536 ||
	    (uint64_t)h->hdr_bytes + h->stats_bytes + h->xfer_bytes > size)
		return -EPROTO;
	return 0;
}

static void page_fill(struct hkv_page *p, const char *buf)
{
	const struct page_hdr *h = (const struct page_hdr *)buf;
	size_t ssz = HKV_MIN((size_t)h->stats_bytes, sizeof(p->stats));
	size_t xsz = HKV_MIN((size_t)h->xfer_bytes, sizeof(p->xfer));

	memcpy(p->name, h->name, sizeof(p->name));
	p->name[sizeof(p->name) - 1] = 0;
	memcpy(p->label, h->label, sizeof(p->label));
	p->label[sizeof(p->label) - 1] = 0;
	p->pid = h->pid;
	p->pool_id = h->pool_id;
	p->pid_start = h->pid_start;
	p->created_ns = h->created_ns;
	p->published_ns = h->published_ns;
	p->interval_ns = h->interval_ns;
	p->publishes = h->publishes;
	p->free_room_low = h->free_room_low;
	p->free_room_high = h->free_room_high;
	p->flags = page_stale(h) ? HKV_PAGE_STALE : 0;
	memcpy(&p->stats, buf + h->hdr_bytes, ssz);
	p->stats.sz = ssz;
	memcpy(&p->xfer, buf + h->hdr_bytes + h->stats_bytes, xsz);
	/* the layout its writer filled (hkv_page_set_xfer()), if smaller than
	 * the file's; older libraries stamped the file's own */
	if (p->xfer.sz < HKV_PAGE_XFER_SZ0 || p->xfer.sz > xsz)
		p->xfer.sz = xsz;
}

/* the whole page, then as much of it as the caller's layout holds */
static void page_out(struct hkv_page *out, const char *buf)
{
	size_t sz = HKV_MIN(out->sz, sizeof(*out)), xoff = offsetof(struct hkv_page, xfer);
	struct hkv_page p;

	memset(&p, 0, sizeof(p));
	p.sz = sz;
	page_fill(&p, buf);
	p.xfer.sz = HKV_MIN(p.xfer.sz, sz - xoff);
	memcpy(out, &p, sz);
}

HKV_API int hkv_page_read(const char *path, struct hkv_page *out)
{
	struct page_hdr h;
	struct stat sb;
	char *buf;
	int fd, err;

	if (!path || !out || out->sz < PAGE_SZ0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);	/* a FIFO: no wait */
	if (fd < 0)
		return -errno;
	err = fstat(fd, &sb) ? -errno : 0;
	if (!err && (!S_ISREG(sb.st_mode) || (size_t)sb.st_size < sizeof(h) ||
		     pread(fd, &h, sizeof(h), 0) != sizeof(h)))
		err = -EPROTO;
	if (!err)
		err = page_check(&h, (size_t)sb.st_size);
	if (err)
		goto close_fd;
	buf = calloc(1, (size_t)h.hdr_bytes + h.stats_bytes + h.xfer_bytes);
	if (!buf) {
		err = -ENOMEM;
		goto close_fd;
	}
	err = page_copy(fd, buf, (size_t)h.hdr_bytes + h.stats_bytes + h.xfer_bytes);
	if (!err)
		err = page_check((const struct page_hdr *)buf, (size_t)sb.st_size);
	if (!err)
		page_out(out, buf);
	free(buf);
close_fd:
	close(fd);
	return err;
}

/* remove the stale pages of named pool @name (their processes are gone),
 * so that a pool attached again after a crash is not reported stale */
static void page_sweep(const char *dir, const char *name)
{
	char pre[HKV_PAGE_NAME_MAX + 8], path[PATH_MAX];
	struct hkv_page *p = malloc(sizeof(*p));
	struct dirent *de;
	size_t pl, l;
	DIR *d;

	d = p ? opendir(dir) : NULL;
	if (!d) {
		free(p);
		return;
	}
	pl = (size_t)snprintf(pre, sizeof(pre), "named.%s.", name);
	while ((de = readdir(d))) {
		l = strlen(de->d_name);
		if (l <= pl + 5 || strncmp(de->d_name, pre, pl) || strcmp(de->d_name + l - 5, ".page") ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		p->sz = sizeof(*p);
		if (!hkv_page_read(path, p) && (p->flags & HKV_PAGE_STALE) && !strcmp(p->name, name))
			unlink(path);
	}
	closedir(d);
	free(p);
}
