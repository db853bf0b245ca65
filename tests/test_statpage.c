// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_statpage.c - the stats page and the counters it carries: the file
 * (where, mode, name, removed at destroy, none when disabled), what
 * hkv_page_read() gives (the figures of hkv_stats, the label, the
 * watermarks) and refuses, stale pages (a child that exits without
 * destroying, a fork() child's destroy leaving the parent's page), labels
 * (copied, bounded, checked), the new counters (failures by reason,
 * extents per allocation, evicted-unit age, the oldest pin through pin,
 * unpin and split), hkv_stats_publish() from the evict callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "res.h"

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/hkv-statpage-%d", (int)getpid());
	setenv("HUGEKV_RUNTIME_DIR", dir, 1);
	setenv("HUGEKV_STATS_INTERVAL_MS", "20", 1);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct hkv_pool *mkpool(uint64_t npages, unsigned nlanes, const char *label)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = nlanes,
				   .evict_window = 1, .free_room_low = 0.25,
				   .free_room_high = 0.5, .label = label };
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	return p;
}

static void page_path(const struct hkv_pool *p, char *buf, size_t n, int pid)
{
	snprintf(buf, n, "%s/pool.%d.%llu.page", dir, pid, (unsigned long long)hkv_pool_id(p));
}

static struct hkv_stats stats(struct hkv_pool *p)
{
	struct hkv_stats st = { .sz = sizeof(st) };

	assert_int_equal(hkv_stats(p, &st), 0);
	return st;
}

static struct hkv_page *read_page(const char *path)
{
	static struct hkv_page pg;

	memset(&pg, 0, sizeof(pg));
	pg.sz = sizeof(pg);
	assert_int_equal(hkv_page_read(path, &pg), 0);
	return &pg;
}

static void test_page_file(void **state)
{
	char label[HKV_LABEL_MAX] = "L2 host tier", path[PATH_MAX];
	struct hkv_pool *p = mkpool(1000, 2, label);
	struct hkv_extent e[4];
	struct hkv_page *pg;
	struct hkv_stats st;
	struct stat sb;

	(void)state;
	memset(label, 'X', sizeof(label) - 1);		/* the pool keeps its own copy */
	assert_string_equal(hkv_pool_label(p), "L2 host tier");
	page_path(p, path, sizeof(path), (int)getpid());
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(stat(dir, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_int_equal(hkv_alloc(p, 10, 0, 0, e, 4), 1);
	assert_int_equal(hkv_unit_add(p, 7, e, 1), 0);
	assert_int_equal(hkv_stats_publish(p), 0);
	pg = read_page(path);
	st = stats(p);
	assert_string_equal(pg->label, "L2 host tier");
	assert_string_equal(pg->name, "");
	assert_int_equal(pg->pid, getpid());
	assert_int_equal(pg->pool_id, hkv_pool_id(p));
	assert_int_equal(pg->flags, 0);
	assert_true(pg->pid_start > 0 && pg->publishes >= 2 && pg->interval_ns == 20000000);
	assert_true(pg->free_room_low == 0.25 && pg->free_room_high == 0.5);
	assert_int_equal(pg->stats.sz, sizeof(struct hkv_stats));
	assert_int_equal(pg->stats.allocs, st.allocs);
	assert_int_equal(pg->stats.free_pages, st.free_pages);
	assert_int_equal(pg->stats.unit_pages, 10);
	assert_int_equal(pg->stats.lane_free_pages[0], st.lane_free_pages[0]);
	assert_int_equal(pg->xfer.endpoints, 0);
	/* the thread publishes on its own: a later figure shows up */
	assert_int_equal(hkv_alloc(p, 3, 1, 0, e, 4), 1);
	for (int i = 0; i < 500 && read_page(path)->stats.allocs != 2; i++)
		usleep(2000);
	assert_int_equal(read_page(path)->stats.allocs, 2);
	hkv_pool_destroy(p);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_page_errors(void **state)
{
	struct hkv_pool *p = mkpool(64, 1, NULL);
	struct hkv_page pg = { .sz = sizeof(pg) };
	char path[PATH_MAX], junk[PATH_MAX + 16];
	static char zeros[8192];
	int fd;

	(void)state;
	page_path(p, path, sizeof(path), (int)getpid());
	assert_string_equal(read_page(path)->label, "");
	assert_int_equal(hkv_page_read(NULL, &pg), -EINVAL);
	assert_int_equal(hkv_page_read(path, NULL), -EINVAL);
	pg.sz = offsetof(struct hkv_page, xfer) + HKV_PAGE_XFER_SZ0 - 1;
	assert_int_equal(hkv_page_read(path, &pg), -EINVAL);
	pg.sz = sizeof(pg);
	snprintf(junk, sizeof(junk), "%s/none.page", dir);
	assert_int_equal(hkv_page_read(junk, &pg), -ENOENT);
	snprintf(junk, sizeof(junk), "%s/junk.page", dir);
	fd = open(junk, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, zeros, 100), 100);		/* short */
	assert_int_equal(hkv_page_read(junk, &pg), -EPROTO);
	assert_int_equal(write(fd, zeros, sizeof(zeros)), (ssize_t)sizeof(zeros));
	close(fd);
	assert_int_equal(hkv_page_read(junk, &pg), -EPROTO);	/* no magic */
	assert_int_equal(hkv_page_read(dir, &pg), -EPROTO);	/* a directory */
	unlink(junk);
	assert_int_equal(hkv_page_dir(NULL, 10), -EINVAL);
	assert_int_equal(hkv_page_dir(junk, 4), -ENAMETOOLONG);
	assert_int_equal(hkv_page_dir(junk, sizeof(junk)), 0);
	assert_string_equal(junk, dir);
	assert_int_equal(hkv_stats_publish(NULL), -EINVAL);
	assert_int_equal(hkv_page_set_xfer(p, NULL), -EINVAL);
	hkv_pool_destroy(p);
}

/* callers of the first layouts (hkv_page_xfer up to its peers): a reader
 * gets what its layout holds and nothing is written past it; a writer's
 * unknown fields read 0 */
static void test_old_layout(void **state)
{
	size_t sz0 = offsetof(struct hkv_page, xfer) + HKV_PAGE_XFER_SZ0;
	struct hkv_pool *p = mkpool(64, 1, "old");
	struct hkv_page_xfer x;
	struct hkv_page *pg = malloc(sizeof(*pg));
	char path[PATH_MAX];

	(void)state;
	assert_non_null(pg);
	memset(&x, 0xab, sizeof(x));		/* past sz0: must not be read */
	x.sz = HKV_PAGE_XFER_SZ0;
	x.endpoints = 1;
	x.transfers = 7;
	x.npeers = 1;
	x.peer[0] = (struct hkv_page_peer){ .peer = 3, .transfers = 7 };
	memset(x.lat_count, 0, sizeof(x.lat_count));
	assert_int_equal(hkv_page_set_xfer(p, &x), 0);
	x.sz = HKV_PAGE_XFER_SZ0 - 1;
	assert_int_equal(hkv_page_set_xfer(p, &x), -EINVAL);
	assert_int_equal(hkv_stats_publish(p), 0);
	page_path(p, path, sizeof(path), (int)getpid());
	memset(pg, 0xcd, sizeof(*pg));
	pg->sz = sz0;
	assert_int_equal(hkv_page_read(path, pg), 0);
	assert_int_equal(pg->sz, sz0);
	assert_int_equal(pg->xfer.sz, HKV_PAGE_XFER_SZ0);
	assert_int_equal(pg->xfer.transfers, 7);
	assert_int_equal(pg->xfer.peer[0].peer, 3);
	assert_int_equal(pg->xfer.grants, 0xcdcdcdcdcdcdcdcdull);	/* untouched */
	pg->sz = sizeof(*pg);
	assert_int_equal(hkv_page_read(path, pg), 0);
	assert_int_equal(pg->xfer.sz, HKV_PAGE_XFER_SZ0);	/* what the writer filled */
	assert_int_equal(pg->xfer.grants, 0);
	assert_int_equal(pg->xfer.peer_grants[0].peer, 0);
	assert_int_equal(pg->xfer.cma_in, 0);
	free(pg);
	hkv_pool_destroy(p);
}

/* read @path as a caller of layout @sz: what it did not get stays 0xcd */
static void read_as(const char *path, struct hkv_page *pg, size_t sz)
{
	memset(pg, 0xcd, sizeof(*pg));
	pg->sz = sz;
	assert_int_equal(hkv_page_read(path, pg), 0);
	assert_int_equal(pg->sz, sz);
}

/* hand the page @x, publish, read it back as a caller of layout @sz */
static void publish_read(struct hkv_pool *p, const struct hkv_page_xfer *x, const char *path,
			 struct hkv_page *pg, size_t sz)
{
	assert_int_equal(hkv_page_set_xfer(p, x), 0);
	assert_int_equal(hkv_stats_publish(p), 0);
	read_as(path, pg, sz);
}

/* the single-copy figures of @x (past HKV_PAGE_XFER_SZ1) are those of @want */
static void assert_cma(const struct hkv_page_xfer *x, const struct hkv_page_xfer *want)
{
	assert_memory_equal((const char *)x + HKV_PAGE_XFER_SZ1,
			    (const char *)want + HKV_PAGE_XFER_SZ1,
			    sizeof(*x) - HKV_PAGE_XFER_SZ1);
}

/* where the file's header keeps its sizes (u32 each; the on-disk layout of
 * PAGE_VERSION 1: magic, version, then these) */
#define FILE_HDR_BYTES		12
#define FILE_STATS_BYTES	16
#define FILE_XFER_BYTES		20

static uint32_t file_u32(const unsigned char *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* the second layout (hkv_page_xfer up to peer_grants, before the single
 * copy): a writer of it, a page file written by a library of it and a
 * reader of it each get what they know, the rest 0 or untouched; the
 * present layout round-trips */
static void test_layout_sz1(void **state)
{
	size_t sz1 = offsetof(struct hkv_page, xfer) + HKV_PAGE_XFER_SZ1;
	struct hkv_pool *p = mkpool(64, 1, "sz1");
	struct hkv_page *pg = malloc(sizeof(*pg));
	char path[PATH_MAX], old[PATH_MAX + 16];
	static const struct hkv_page_xfer none;
	unsigned char buf[16384];
	struct hkv_page_xfer x;
	uint32_t end, old_sz = (uint32_t)HKV_PAGE_XFER_SZ1;
	ssize_t n;
	int fd;

	(void)state;
	assert_non_null(pg);
	assert_int_equal(HKV_PAGE_XFER_SZ1, offsetof(struct hkv_page_xfer, peer_grants) +
			 sizeof(x.peer_grants));
	page_path(p, path, sizeof(path), (int)getpid());
	/* the present layout, every single-copy figure its own value */
	memset(&x, 0, sizeof(x));
	x.sz = sizeof(x);
	x.endpoints = 1;
	x.grants = 5;
	x.cma_out = 1;
	x.cma_in = 2;
	x.cma_refused = 3;
	x.cma_calls = 4;
	x.cma_runs = 5;
	x.cma_bytes = 6;
	x.cma_faults = 7;
	publish_read(p, &x, path, pg, sizeof(*pg));
	assert_int_equal(pg->xfer.sz, sizeof(pg->xfer));
	assert_cma(&pg->xfer, &x);
	/* a reader of the second layout: up to its end, nothing past it */
	read_as(path, pg, sz1);
	assert_int_equal(pg->xfer.sz, HKV_PAGE_XFER_SZ1);
	assert_int_equal(pg->xfer.grants, 5);
	assert_int_equal(pg->xfer.cma_out, 0xcdcdcdcdcdcdcdcdull);	/* untouched */
	assert_int_equal(pg->xfer.cma_faults, 0xcdcdcdcdcdcdcdcdull);
	/* the file as a library of the second layout wrote it: its xfer part
	 * ends at HKV_PAGE_XFER_SZ1 (what follows is not read) */
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	end = file_u32(buf, FILE_HDR_BYTES) + file_u32(buf, FILE_STATS_BYTES) + old_sz;
	assert_int_equal(file_u32(buf, FILE_XFER_BYTES), sizeof(struct hkv_page_xfer));
	assert_true(n > 0 && end + sizeof(x) - old_sz <= (size_t)n);
	memset(buf + end, 0xab, sizeof(x) - old_sz);
	memcpy(buf + FILE_XFER_BYTES, &old_sz, sizeof(old_sz));
	snprintf(old, sizeof(old), "%s/pool.old.page", dir);
	fd = open(old, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, (size_t)n), n);
	close(fd);
	read_as(old, pg, sizeof(*pg));
	assert_int_equal(pg->xfer.sz, HKV_PAGE_XFER_SZ1);
	assert_int_equal(pg->xfer.endpoints, 1);
	assert_int_equal(pg->xfer.grants, 5);
	assert_cma(&pg->xfer, &none);
	unlink(old);
	/* a writer of the second layout: its unknown fields read 0 */
	memset(&x, 0xab, sizeof(x));		/* past HKV_PAGE_XFER_SZ1: not read */
	x.sz = HKV_PAGE_XFER_SZ1;
	x.endpoints = 1;
	x.grants = 9;
	x.npeers = 0;
	publish_read(p, &x, path, pg, sizeof(*pg));
	assert_int_equal(pg->xfer.sz, HKV_PAGE_XFER_SZ1);	/* the cma figures absent */
	assert_int_equal(pg->xfer.grants, 9);
	assert_cma(&pg->xfer, &none);
	free(pg);
	hkv_pool_destroy(p);
}

static void test_disabled(void **state)
{
	struct hkv_pool *p;
	struct hkv_page_xfer x = { .sz = sizeof(x) };
	char path[PATH_MAX];

	(void)state;
	setenv("HUGEKV_STATS_INTERVAL_MS", "0", 1);
	p = mkpool(64, 1, "off");
	page_path(p, path, sizeof(path), (int)getpid());
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(hkv_stats_publish(p), -ENOENT);
	assert_int_equal(hkv_page_set_xfer(p, &x), -ENOENT);
	assert_string_equal(hkv_pool_label(p), "off");
	hkv_pool_destroy(p);
	/* a bad value is reported and the default used */
	setenv("HUGEKV_STATS_INTERVAL_MS", "soon", 1);
	p = mkpool(64, 1, NULL);
	assert_int_equal(access(path, F_OK), -1);
	page_path(p, path, sizeof(path), (int)getpid());
	assert_int_equal(read_page(path)->interval_ns, 1000000000ull);
	hkv_pool_destroy(p);
	setenv("HUGEKV_STATS_INTERVAL_MS", "20", 1);
	/* a runtime directory that cannot be made: the pool works, no page */
	setenv("HUGEKV_RUNTIME_DIR", "/proc/no/such/dir", 1);
	p = mkpool(64, 1, NULL);
	assert_int_equal(hkv_stats_publish(p), -ENOENT);
	hkv_pool_destroy(p);
	setenv("HUGEKV_RUNTIME_DIR", dir, 1);
}

static void test_labels(void **state)
{
	char long_label[HKV_LABEL_MAX + 1];
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 16 };
	struct hkv_pool *p = NULL;

	(void)state;
	memset(long_label, 'a', sizeof(long_label));
	long_label[HKV_LABEL_MAX] = 0;
	o.label = long_label;
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	long_label[HKV_LABEL_MAX - 1] = 0;		/* 63 bytes: the most */
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(strlen(hkv_pool_label(p)), HKV_LABEL_MAX - 1);
	hkv_pool_destroy(p);
	o.label = "new\nline";
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	o.label = "del\x7f";
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	o.label = "";
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_string_equal(hkv_pool_label(p), "");
	hkv_pool_destroy(p);
	/* an older caller's struct ends before the label: none */
	o.label = "ignored";
	o.sz = offsetof(struct hkv_pool_opts, name);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_string_equal(hkv_pool_label(p), "");
	hkv_pool_destroy(p);
	assert_string_equal(hkv_pool_label(NULL), "");
}

/* a process that dies without hkv_pool_destroy() leaves a stale page */
static void test_stale(void **state)
{
	char path[PATH_MAX];
	int fds[2], status;
	pid_t pid;
	uint64_t id = 0;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct hkv_pool *p = mkpool(64, 1, "child");

		id = hkv_pool_id(p);
		if (write(fds[1], &id, sizeof(id)) != sizeof(id))
			_exit(1);
		pause();		/* killed with SIGKILL */
		_exit(1);
	}
	assert_int_equal(read(fds[0], &id, sizeof(id)), sizeof(id));
	snprintf(path, sizeof(path), "%s/pool.%d.%llu.page", dir, (int)pid, (unsigned long long)id);
	assert_int_equal(read_page(path)->flags, 0);
	assert_string_equal(read_page(path)->label, "child");
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(read_page(path)->flags, HKV_PAGE_STALE);
	assert_int_equal(read_page(path)->pid, pid);
	unlink(path);
	close(fds[0]);
	close(fds[1]);
}

/* a fork() child's destroy frees its copy and leaves the parent's page */
static void test_fork_child_destroy(void **state)
{
	struct hkv_pool *p = mkpool(64, 1, "parent");
	char path[PATH_MAX];
	int status;
	pid_t pid;

	(void)state;
	page_path(p, path, sizeof(path), (int)getpid());
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int bad = hkv_stats_publish(p) != -ECHILD;

		hkv_pool_destroy(p);
		_exit(bad || access(path, F_OK) != 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(read_page(path)->flags, 0);
	assert_int_equal(hkv_stats_publish(p), 0);
	hkv_pool_destroy(p);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_failure_reasons_and_extents(void **state)
{
	struct hkv_pool *p = mkpool(256, 1, NULL);
	struct hkv_extent e[64];
	struct hkv_stats st;

	(void)state;
	/* a comb of free single pages: every other page held */
	for (int i = 0; i < 128; i++)
		assert_int_equal(hkv_alloc(p, 2, 0, HKV_ALLOC_CONTIG, &e[0], 1), 1);
	for (uint64_t pg = 0; pg < 256; pg += 2) {
		struct hkv_extent one = { pg, 1 };

		assert_int_equal(hkv_free(p, &one, 1), 0);
	}
	assert_int_equal(hkv_alloc(p, 3, 0, 0, e, 2), -ENOSPC);		/* 3 extents needed */
	assert_int_equal(hkv_alloc(p, 1000, 0, 0, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 2, 0, 0, e, 64), 2);		/* 2 */
	assert_int_equal(hkv_alloc(p, 3, 0, 0, e, 64), 3);		/* 3-4 */
	assert_int_equal(hkv_alloc(p, 7, 0, 0, e, 64), 7);		/* 5-8 */
	assert_int_equal(hkv_alloc(p, 9, 0, 0, e, 64), 9);		/* 9-16 */
	assert_int_equal(hkv_alloc(p, 40, 0, 0, e, 64), 40);		/* more */
	st = stats(p);
	assert_int_equal(st.alloc_failures, 2);
	assert_int_equal(st.alloc_failures_nospc, 1);
	assert_int_equal(st.extents_hist[0], 128);
	for (int i = 1; i < HKV_EXTENTS_HIST; i++)
		assert_int_equal(st.extents_hist[i], 1);
	assert_int_equal(st.multi_extent_allocs, 5);
	hkv_pool_destroy(p);
}

static void test_evict_age(void **state)
{
	struct hkv_pool *p = mkpool(64, 1, NULL);
	struct hkv_extent e;
	struct hkv_stats st;
	uint64_t sum = 0;

	(void)state;
	for (uint64_t u = 0; u < 4; u++) {
		assert_int_equal(hkv_alloc(p, 16, 0, 0, &e, 1), 1);
		assert_int_equal(hkv_unit_add(p, u, &e, 1), 0);
	}
	usleep(150000);				/* units 0, 1: over 100 ms old (coarse clock) */
	assert_int_equal(hkv_unit_touch(p, 1), 0);	/* 1: young again */
	assert_int_equal(hkv_evict(p, 32), 32);		/* evicts 0 and 2 */
	st = stats(p);
	assert_int_equal(st.evictions, 2);
	for (int i = 0; i < HKV_AGE_HIST; i++)
		sum += st.evict_age_hist[i];
	assert_int_equal(sum, 2);
	assert_int_equal(st.evict_age_hist[2], 2);	/* 100 ms .. 1 s */
	assert_true(st.evict_age_ns >= 2 * 120000000ull && st.evict_age_ns < 2000000000ull);
	hkv_pool_destroy(p);
}

static void test_oldest_pin(void **state)
{
	struct hkv_pool *p = mkpool(64, 1, NULL);
	struct hkv_extent e;
	uint64_t old;

	(void)state;
	assert_int_equal(stats(p).oldest_pin_ns, 0);
	for (uint64_t u = 0; u < 3; u++) {
		assert_int_equal(hkv_alloc(p, 8, 0, 0, &e, 1), 1);
		assert_int_equal(hkv_unit_add(p, u, &e, 1), 0);
	}
	assert_int_equal(hkv_unit_pin(p, 0), 0);
	usleep(60000);				/* the coarse clock: 4 ms ticks */
	assert_int_equal(hkv_unit_pin(p, 1), 0);
	assert_int_equal(hkv_unit_pin(p, 0), 0);	/* a second pin: still the oldest */
	old = stats(p).oldest_pin_ns;
	assert_true(old >= 50000000ull);
	/* split the oldest: its second half is pinned as long */
	assert_int_equal(hkv_unit_split(p, 0, 4, 10), 0);
	assert_int_equal(hkv_unit_unpin(p, 0), 0);
	assert_int_equal(hkv_unit_unpin(p, 0), 0);	/* 0 is out of the list */
	assert_true(stats(p).oldest_pin_ns >= old);	/* 10 holds its age */
	assert_int_equal(hkv_unit_unpin(p, 10), 0);
	assert_int_equal(hkv_unit_unpin(p, 10), 0);	/* 10 had both pins */
	assert_true(stats(p).oldest_pin_ns < old);	/* 1 is the oldest now */
	assert_int_equal(hkv_unit_unpin(p, 1), 0);
	assert_int_equal(stats(p).oldest_pin_ns, 0);
	assert_int_equal(stats(p).pinned_units, 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

static int cb_ret = 1;
static void publish_in_cb(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	(void)unit, (void)ext, (void)n;
	cb_ret = hkv_stats_publish(ctx);
}

static void test_publish_in_callback(void **state)
{
	struct hkv_pool *p = mkpool(16, 1, NULL);
	struct hkv_extent e;

	(void)state;
	hkv_set_evict_fn(p, publish_in_cb, p);
	assert_int_equal(hkv_alloc(p, 16, 0, 0, &e, 1), 1);
	assert_int_equal(hkv_unit_add(p, 1, &e, 1), 0);
	assert_int_equal(hkv_evict(p, 16), 16);
	assert_int_equal(cb_ret, -EDEADLK);
	assert_int_equal(hkv_stats_publish(p), 0);
	hkv_pool_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_file),
		cmocka_unit_test(test_page_errors),
		cmocka_unit_test(test_disabled),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_fork_child_destroy),
		cmocka_unit_test(test_failure_reasons_and_extents),
		cmocka_unit_test(test_evict_age),
		cmocka_unit_test(test_oldest_pin),
		cmocka_unit_test(test_old_layout),
		cmocka_unit_test(test_layout_sz1),
		cmocka_unit_test(test_publish_in_callback),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
