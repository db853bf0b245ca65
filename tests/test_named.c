// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_named.c - named pools with real processes: create in one, attach in
 * others (fork() children attach by name: mappings are not inherited), every
 * call from every process, units and bytes that survive their creator's
 * exit (warm restart), hkv_unit_list()/hkv_unit_extents(), the refusals of
 * attach (missing, bad name, symlink, writable by others, another owner, an
 * old layout, unfinished creation, twice in one process), unlink (-EBUSY
 * while a live process is attached, forced, after a dead one), index-only
 * and hugetlbfs-backed pools (a hugetlbfs mount made for the test when the
 * machine lets it), and system-call failures injected through os.c's table
 * (nothing left behind).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_named.h"
#include "named.h"
#include "res.h"

static int setup(void **state)
{
	(void)state;
	return tn_dir_setup("hkv-named");
}

static int teardown(void **state)
{
	(void)state;
	return tn_dir_teardown();
}

static struct hkv_pool *mk(const char *name, uint64_t npages, uint64_t page_bytes,
			   unsigned nlanes, int backing)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .page_bytes = page_bytes,
				   .nlanes = nlanes, .backing = backing, .name = name };
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	return p;
}

/* run fn in a child process; its exit status (0 = all good) */
static int in_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- every call from another process ------------------------------------ */

static int child_fill(void *arg)
{
	const char *name = arg;
	struct hkv_pool *p = NULL;
	struct hkv_extent e[4];
	int n;

	if (hkv_pool_attach(name, 0, &p))
		return 1;
	for (uint64_t u = 0; u < 8; u++) {
		n = hkv_alloc(p, 3, HKV_LANE_ANY, 0, e, 4);
		if (n < 1)
			return 2;
		for (int i = 0; i < n; i++)
			for (uint64_t pg = e[i].start; pg < e[i].start + e[i].len; pg++)
				memset(hkv_page_ptr(p, pg), (int)(0x40 + u), 4096);
		if (hkv_unit_add(p, 1000 + u, e, (unsigned)n))
			return 3;
	}
	if (hkv_unit_pin(p, 1000) || hkv_unit_unpin(p, 1000) || hkv_check(p))
		return 4;
	hkv_pool_destroy(p);	/* detach: the pool stays */
	return 0;
}

static void test_other_process(void **state)
{
	struct hkv_pool *p = mk("other", 256, 4096, 2, HKV_BACKING_SMALL);
	struct hkv_named_info info = { .sz = sizeof(info) };
	uint64_t ids[16];
	struct hkv_extent e[4];
	int64_t n;

	(void)state;
	assert_int_equal(in_child(child_fill, "other"), 0);
	n = hkv_unit_list(p, ids, 16);
	assert_int_equal(n, 8);
	for (int64_t i = 0; i < n; i++) {
		int k = hkv_unit_extents(p, ids[i], e, 4);

		assert_true(k >= 1);
		for (int j = 0; j < k; j++) {
			const unsigned char *b = hkv_page_ptr(p, e[j].start);

			assert_int_equal(b[0], 0x40 + (ids[i] - 1000));
			assert_int_equal(b[4095], 0x40 + (ids[i] - 1000));
		}
	}
	assert_int_equal(hkv_unit_extents(p, 7, e, 4), -ENOENT);
	assert_int_equal(hkv_available(p), 256 - 24);
	assert_int_equal(hkv_check(p), 0);
	info.sz = offsetof(struct hkv_named_info, created_ns);
	assert_int_equal(hkv_pool_info(p, &info), -EINVAL);	/* too small */
	info.sz = sizeof(info);
	assert_int_equal(hkv_pool_info(p, &info), 0);
	assert_string_equal(info.name, "other");
	assert_int_equal(info.nattached, 1);
	assert_int_equal(info.pids[0], getpid());
	assert_int_equal(info.npages, 256);
	/* this process frees what the child made */
	for (int64_t i = 0; i < n; i++)
		assert_int_equal(hkv_unit_remove(p, ids[i], HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_available(p), 256);
	assert_int_equal(hkv_unit_list(p, NULL, 0), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("other"), 0);
	assert_int_equal(hkv_pool_attach("other", 0, &p), -ENOENT);
}

/* ---- warm restart: the creator exits, units and bytes stay ------------- */

static int child_create_fill(void *arg)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 512, .page_bytes = 4096,
				   .nlanes = 4, .backing = HKV_BACKING_SMALL, .name = arg };
	struct hkv_pool *p = NULL;
	struct hkv_extent e[8];
	int n;

	if (hkv_pool_create(&o, &p))
		return 1;
	for (uint64_t u = 0; u < 32; u++) {
		n = hkv_alloc(p, 1 + u % 5, (unsigned)(u % 4), 0, e, 8);
		if (n < 1)
			return 2;
		for (int i = 0; i < n; i++)
			for (uint64_t pg = e[i].start; pg < e[i].start + e[i].len; pg++)
				*(uint64_t *)hkv_page_ptr(p, pg) = (u << 32) | pg;
		if (hkv_unit_add(p, 0xabc000 + u, e, (unsigned)n) ||
		    (u % 2 == 0 && hkv_unit_seal(p, 0xabc000 + u)))
			return 3;
	}
	_exit(0);	/* no destroy: a process that just ends */
}

static void test_warm_restart(void **state)
{
	struct hkv_pool *p = NULL;
	uint64_t ids[64], pages = 0;
	struct hkv_extent e[8];
	int64_t n;

	(void)state;
	assert_int_equal(in_child(child_create_fill, "warm"), 0);
	assert_int_equal(hkv_pool_attach("warm", 0, &p), 0);
	n = hkv_unit_list(p, ids, 64);
	assert_int_equal(n, 32);
	for (int64_t i = 0; i < n; i++) {
		uint64_t u = ids[i] - 0xabc000;
		int k = hkv_unit_extents(p, ids[i], e, 8);

		assert_true(u < 32 && k >= 1);
		for (int j = 0; j < k; j++)
			for (uint64_t pg = e[j].start; pg < e[j].start + e[j].len; pg++, pages++)
				assert_int_equal(*(uint64_t *)hkv_page_ptr(p, pg), (u << 32) | pg);
		assert_int_equal(hkv_unit_touch(p, ids[i]), 0);	/* a hit */
		/* the even units were sealed before the restart */
		assert_int_equal(hkv_unit_verify(p, ids[i]), u % 2 ? -ENODATA : 0);
	}
	/* a byte changed under a sealed unit is found */
	assert_true(hkv_unit_extents(p, 0xabc000, e, 8) >= 1);
	((char *)hkv_page_ptr(p, e[0].start))[100] ^= 1;
	assert_int_equal(hkv_unit_verify(p, 0xabc000), -EBADMSG);
	((char *)hkv_page_ptr(p, e[0].start))[100] ^= 1;
	assert_int_equal(hkv_unit_verify(p, 0xabc000), 0);
	assert_int_equal(hkv_unit_verify(p, 7), -ENOENT);
	assert_int_equal(hkv_unit_seal(NULL, 7), -EINVAL);
	/* a split clears the checksum of both halves; a new seal holds */
	assert_int_equal(hkv_unit_extents(p, 0xabc004, e, 8), 1);
	assert_int_equal(e[0].len, 5);
	assert_int_equal(hkv_unit_split(p, 0xabc004, 2, 0xdef000), 0);
	assert_int_equal(hkv_unit_verify(p, 0xabc004), -ENODATA);
	assert_int_equal(hkv_unit_verify(p, 0xdef000), -ENODATA);
	assert_int_equal(hkv_unit_seal(p, 0xdef000), 0);
	assert_int_equal(hkv_unit_verify(p, 0xdef000), 0);
	assert_int_equal(hkv_available(p), 512 - pages);
	assert_int_equal(hkv_check(p), 0);
	/* eviction from here, with this process's callback */
	assert_int_equal(hkv_evict(p, 512), (int64_t)pages);
	assert_int_equal(hkv_unit_list(p, NULL, 0), 0);
	hkv_pool_destroy(p);
	/* the dead creator's slot does not block the removal */
	assert_int_equal(hkv_pool_unlink("warm"), 0);
}

/* ---- index-only named pools ------------------------------------------- */

static int child_index(void *arg)
{
	struct hkv_pool *p = NULL;
	struct hkv_extent e[2];

	(void)arg;
	if (hkv_pool_attach("index", 0, &p))
		return 1;
	if (hkv_page_ptr(p, 0) || hkv_regions(p, NULL, 0) != 0)
		return 2;
	if (hkv_alloc(p, 100000, 1, 0, e, 2) != 1 || hkv_unit_add(p, 9, e, 1))
		return 3;
	if (hkv_unit_seal(p, 9) != -EINVAL || hkv_unit_verify(p, 9) != -EINVAL)
		return 4;	/* no bytes to sum */
	hkv_pool_destroy(p);
	return 0;
}

static void test_index_only(void **state)
{
	struct hkv_pool *p = mk("index", 3500000, 0, 4, HKV_BACKING_AUTO);
	struct hkv_extent e[2];

	(void)state;
	assert_int_equal(in_child(child_index, NULL), 0);
	assert_int_equal(hkv_unit_extents(p, 9, e, 2), 1);
	assert_int_equal(e[0].len, 100000);
	assert_int_equal(hkv_available(p), 3400000);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("index"), 0);
}

/* ---- refusals ------------------------------------------------------------ */

static void path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/hugekv.%s.meta", tn_dir, name);
}

static int child_attach_rc(void *arg)
{
	struct hkv_pool *p = NULL;
	int rc = hkv_pool_attach(arg, 0, &p);

	if (!rc)
		hkv_pool_destroy(p);
	return -rc;
}

static void test_refusals(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64, .name = "bad/name" };
	struct hkv_pool *p = NULL, *q = NULL;
	char path[256], link[300];
	uint32_t v;
	int fd;

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	o.name = ".hidden";
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	o.name = "";
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	assert_int_equal(hkv_pool_attach(NULL, 0, &p), -EINVAL);
	assert_int_equal(hkv_pool_attach("x", 1, &p), -EINVAL);
	assert_int_equal(hkv_pool_attach("x", 0, NULL), -EINVAL);
	assert_int_equal(hkv_pool_attach("missing", 0, &p), -ENOENT);
	assert_int_equal(hkv_pool_unlink("missing"), -ENOENT);
	assert_int_equal(hkv_pool_unlink_flags("x", 2), -EINVAL);

	p = mk("ref", 64, 0, 1, HKV_BACKING_AUTO);
	/* the same name again, and attached twice in one process */
	o.name = "ref";
	assert_int_equal(hkv_pool_create(&o, &q), -EEXIST);
	assert_int_equal(hkv_pool_attach("ref", 0, &q), -EADDRINUSE);
	/* a live process attached: no removal unless forced */
	assert_int_equal(hkv_pool_unlink("ref"), -EBUSY);
	assert_int_equal(hkv_pool_info(p, NULL), -EINVAL);
	assert_int_equal(in_child(child_attach_rc, "ref"), 0);

	path_of("ref", path, sizeof(path));
	/* group- or world-writable */
	assert_int_equal(chmod(path, 0620), 0);
	assert_int_equal(in_child(child_attach_rc, "ref"), EPERM);
	assert_int_equal(chmod(path, 0602), 0);
	assert_int_equal(in_child(child_attach_rc, "ref"), EPERM);
	assert_int_equal(chmod(path, 0600), 0);
	/* another owner (root can make one) */
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(in_child(child_attach_rc, "ref"), EPERM);
		assert_int_equal(chown(path, 0, 0), 0);
	}
	/* an old layout */
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	v = 999;
	assert_int_equal(pwrite(fd, &v, 4, offsetof(struct named_id, layout)), 4);
	assert_int_equal(in_child(child_attach_rc, "ref"), EPROTO);
	v = 1;		/* the one pthread mutex for the whole pool */
	assert_int_equal(pwrite(fd, &v, 4, offsetof(struct named_id, layout)), 4);
	assert_int_equal(in_child(child_attach_rc, "ref"), EPROTO);
	v = NAMED_LAYOUT;
	assert_int_equal(pwrite(fd, &v, 4, offsetof(struct named_id, layout)), 4);
	/* a creation that did not finish */
	v = 0;
	assert_int_equal(pwrite(fd, &v, 4, offsetof(struct named_id, ready)), 4);
	assert_int_equal(in_child(child_attach_rc, "ref"), EAGAIN);
	v = 1;
	assert_int_equal(pwrite(fd, &v, 4, offsetof(struct named_id, ready)), 4);
	close(fd);
	assert_int_equal(in_child(child_attach_rc, "ref"), 0);
	/* a symlink in place of the file */
	snprintf(link, sizeof(link), "%s.real", path);
	assert_int_equal(rename(path, link), 0);
	assert_int_equal(symlink(link, path), 0);
	assert_int_equal(in_child(child_attach_rc, "ref"), EPERM);
	assert_int_equal(hkv_pool_unlink("ref"), -EPERM);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rename(link, path), 0);
	/* not a pool's file */
	fd = open(path, O_RDWR);
	assert_int_equal(pwrite(fd, "XXXXXXXX", 8, 0), 8);
	assert_int_equal(in_child(child_attach_rc, "ref"), EPROTO);
	assert_int_equal(pwrite(fd, NAMED_MAGIC, 8, 0), 8);
	close(fd);
	/* forced while attached */
	assert_int_equal(hkv_pool_unlink_flags("ref", HKV_UNLINK_FORCE), 0);
	assert_int_equal(hkv_alloc(p, 1, 0, 0, (struct hkv_extent[1]){ 0 }, 1), 1);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_attach("ref", 0, &p), -ENOENT);
}

/* a private pool answers the unit listing too; hkv_pool_info() does not */
static void test_private_listing(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64 };
	struct hkv_named_info info = { .sz = sizeof(info) };
	struct hkv_pool *p = NULL;
	struct hkv_extent e[2];
	uint64_t ids[2];

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_alloc(p, 4, 0, 0, e, 2), 1);
	assert_int_equal(hkv_unit_add(p, 5, e, 1), 0);
	assert_int_equal(hkv_unit_list(p, ids, 2), 1);
	assert_int_equal(ids[0], 5);
	assert_int_equal(hkv_unit_list(p, NULL, 1), -EINVAL);
	assert_int_equal(hkv_unit_list(NULL, ids, 1), -EINVAL);
	assert_int_equal(hkv_unit_extents(p, 5, NULL, 0), 1);
	assert_int_equal(hkv_unit_extents(p, 5, NULL, 1), -EINVAL);
	assert_int_equal(hkv_pool_info(p, &info), -EOPNOTSUPP);
	hkv_pool_destroy(p);
}

/* ---- hugetlbfs -------------------------------------------------------------- */

static void test_hugetlbfs(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 8, .page_bytes = 2 << 20,
				   .backing = HKV_BACKING_HUGE_2M, .flags = HKV_POOL_STRICT,
				   .name = "huge" };
	struct hkv_pool *p = NULL;
	struct hkv_region r;
	char mnt[96];
	int rc;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/mnt", tn_dir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("none", mnt, "hugetlbfs", 0, "pagesize=2M,mode=0700")) {
		rmdir(mnt);
		skip();		/* not root, or no 2 MiB hugepages here */
	}
	rc = hkv_pool_create(&o, &p);
	if (rc == -ENOMEM) {	/* too few free hugepages right now */
		umount(mnt);
		rmdir(mnt);
		skip();
	}
	assert_int_equal(rc, 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, 2 << 20);
	memset(hkv_page_ptr(p, 7), 0x5a, 2 << 20);
	assert_int_equal(arena_verify_smaps(hkv_page_ptr(p, 0), 8ull << 20), 2 << 20);
	assert_int_equal(in_child(child_attach_rc, "huge"), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("huge"), 0);
	assert_int_equal(umount(mnt), 0);
	rmdir(mnt);
}

/* ---- injected failures: clear errors, nothing left ------------------------ */

static int fail_at;		/* which file call fails */
static struct os_ops ops;

static int inj_ftruncate(int fd, uint64_t len)
{
	return fail_at == 1 ? -EIO : os_default_ops.ftruncate(fd, len);
}

static int inj_fallocate(int fd, uint64_t off, uint64_t len)
{
	return fail_at == 2 ? -ENOSPC : os_default_ops.fallocate(fd, off, len);
}

static int inj_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	if (fail_at == 3 && fd >= 0)
		return -ENOMEM;
	return os_default_ops.mmap(addr, len, prot, flags, fd, off, out);
}

/* no hugetlbfs mount: /proc/self/mounts unreadable */
static int inj_open(const char *path, int flags)
{
	if (fail_at == 4 && !strcmp(path, "/proc/self/mounts"))
		return -ENOENT;
	return os_default_ops.open(path, flags);
}

static void test_injected(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64, .page_bytes = 4096,
				   .backing = HKV_BACKING_SMALL, .name = "inj" };
	const int want[] = { 0, -EIO, -ENOMEM, -ENOMEM };
	struct hkv_pool *p = NULL;
	char path[256];

	(void)state;
	ops = os_default_ops;
	ops.ftruncate = inj_ftruncate;
	ops.fallocate = inj_fallocate;
	ops.mmap = inj_mmap;
	ops.open = inj_open;
	os_set_ops(&ops);
	path_of("inj", path, sizeof(path));
	for (fail_at = 1; fail_at <= 3; fail_at++) {
		assert_int_equal(hkv_pool_create(&o, &p), want[fail_at]);
		assert_int_equal(access(path, F_OK), -1);	/* nothing left */
	}
	/* a strict hugepage backing without a mount */
	fail_at = 4;
	o.backing = HKV_BACKING_HUGE_2M;
	o.flags = HKV_POOL_STRICT;
	assert_int_equal(hkv_pool_create(&o, &p), -EOPNOTSUPP);
	assert_int_equal(access(path, F_OK), -1);
	/* not strict: THP on tmpfs */
	o.flags = 0;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	os_set_ops(NULL);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("inj"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_other_process),
		cmocka_unit_test(test_warm_restart),
		cmocka_unit_test(test_index_only),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_private_listing),
		cmocka_unit_test(test_hugetlbfs),
		cmocka_unit_test(test_injected),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
