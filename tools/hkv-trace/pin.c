// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pin.c - pin hkv-trace's maps under a directory on bpffs (--pin) and
 * remove them again (--unpin), without trusting the directory: a bpffs
 * mounted 1777 lets any user create a directory there and replace root's
 * pins in it, and --unpin is given a path that may be anything. Each step
 * works on an open descriptor of the directory (no path is looked up twice)
 * and removes nothing it has not checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/hugekv_trace.skel.h"
#include "hkv-trace.h"

#define BPF_FS_MAGIC	0xcafe4a11
#define BPFFS		"/sys/fs/bpf"
/* the mode hkv-trace mounts bpffs with: root's alone */
#define BPFFS_MODE	"mode=0700"

/* maps worth pinning (the ring buffer is drained by its reader) */
static const struct {
	const char *name;
	enum bpf_map_type type;
} pin_maps[] = {
	{ "counts", BPF_MAP_TYPE_ARRAY }, { "pools", BPF_MAP_TYPE_HASH },
	{ "lanes", BPF_MAP_TYPE_HASH }, { "hists", BPF_MAP_TYPE_ARRAY },
	{ "xfers", BPF_MAP_TYPE_HASH },
};
#define NPINS	(sizeof(pin_maps) / sizeof(pin_maps[0]))

static bool fd_on_bpffs(int fd)
{
	struct statfs fs;

	return !fstatfs(fd, &fs) && fs.f_type == BPF_FS_MAGIC;
}

static bool on_bpffs(const char *path)
{
	struct statfs fs;

	return !statfs(path, &fs) && fs.f_type == BPF_FS_MAGIC;
}

/* the path of @name inside the directory open as @dfd, for the bpf(2)
 * calls that take a path: resolved through the descriptor, not DIR again */
static const char *at(int dfd, const char *name, char *buf, size_t n)
{
	snprintf(buf, n, "/proc/self/fd/%d/%s", dfd, name);
	return buf;
}

/* open DIR, which must be a directory (not a symlink) on a bpffs */
static int open_bpffs_dir(const char *dir, const char *what)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	struct stat st;

	if (fd < 0) {
		int err = -errno;

		if (!lstat(dir, &st) && S_ISLNK(st.st_mode)) {
			fprintf(stderr, "hkv-trace: %s %s: a symbolic link: refused\n", what, dir);
			return -ELOOP;
		}
		fprintf(stderr, "hkv-trace: %s %s: %s\n", what, dir, strerror(-err));
		return err;
	}
	if (!fd_on_bpffs(fd)) {
		fprintf(stderr, "hkv-trace: %s: %s is not on a bpffs: nothing changed\n", what, dir);
		close(fd);
		return -ENOTSUP;
	}
	return fd;
}

/* a pin directory is trusted only when it is ours and nobody else may
 * write into it (and so replace a pin) */
static int check_owner(int fd, const char *dir)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "hkv-trace: --pin %s: owned by uid %u, not by this user (uid %u): "
			"refused, another user could replace the pins\n", dir, (unsigned)st.st_uid,
			(unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fprintf(stderr, "hkv-trace: --pin %s: writable by %s (mode %04o): refused, "
			"another user could replace the pins\n", dir,
			st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* make DIR on a bpffs (mounting /sys/fs/bpf, mode 0700, when DIR is under
 * it and nothing is mounted there) and open it */
static int pin_dir(const char *dir)
{
	char parent[PATH_MAX], *slash;
	int fd, ret;

	if (!strncmp(dir, BPFFS "/", sizeof(BPFFS)) && !on_bpffs(BPFFS)) {
		if (mount("bpf", BPFFS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, BPFFS_MODE)) {
			fprintf(stderr, "hkv-trace: mounting bpffs on " BPFFS ": %s\n",
				strerror(errno));
			return -errno;
		}
		fprintf(stderr, "hkv-trace: mounted bpffs on " BPFFS " (" BPFFS_MODE ")\n");
	}
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (!on_bpffs(parent) && !on_bpffs(dir)) {
		fprintf(stderr, "hkv-trace: %s is not on a bpffs (mount -t bpf bpf " BPFFS ")\n", dir);
		return -ENOTSUP;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "hkv-trace: mkdir %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	fd = open_bpffs_dir(dir, "--pin");
	if (fd < 0)
		return fd;
	ret = check_owner(fd, dir);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/**
 * tr_pin() - pin the maps as DIR/<map>, replacing stale pins
 * @t: a loaded tracer
 * @dir: a directory on a bpffs (created 0700 if missing), owned by this
 *	user and writable by nobody else
 *
 * Return: 0, or -errno with a message printed.
 */
int tr_pin(struct tracer *t, const char *dir)
{
	char path[PATH_MAX];
	int fd = pin_dir(dir), ret = 0;
	unsigned i;

	if (fd < 0)
		return fd;
	for (i = 0; !ret && i < NPINS; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(t->skel->obj, pin_maps[i].name);

		if (unlinkat(fd, pin_maps[i].name, 0) && errno != ENOENT) {
			ret = -errno;
			fprintf(stderr, "hkv-trace: removing stale pin %s/%s: %s\n", dir,
				pin_maps[i].name, strerror(errno));
			break;
		}
		ret = m ? bpf_map__pin(m, at(fd, pin_maps[i].name, path, sizeof(path))) : -ENOENT;
		if (ret)
			fprintf(stderr, "hkv-trace: pinning %s/%s: %s\n", dir, pin_maps[i].name,
				strerror(-ret));
	}
	close(fd);
	return ret;
}

/* is DIR/name (open as @dfd) the pin of map @i? 1 yes, 0 absent, -errno
 * (with a message) when it is something else */
static int is_our_pin(int dfd, const char *dir, unsigned i)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	struct stat st;
	int mfd, ok;

	if (fstatat(dfd, pin_maps[i].name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	mfd = bpf_obj_get(at(dfd, pin_maps[i].name, path, sizeof(path)));
	memset(&info, 0, sizeof(info));
	ok = mfd >= 0 && !bpf_obj_get_info_by_fd(mfd, &info, &len) &&
	     !strcmp(info.name, pin_maps[i].name) && info.type == pin_maps[i].type;
	if (mfd >= 0)
		close(mfd);
	if (ok)
		return 1;
	fprintf(stderr, "hkv-trace: --unpin: %s/%s is not a pin of hkv-trace's \"%s\" map: "
		"nothing removed\n", dir, pin_maps[i].name, pin_maps[i].name);
	return -EEXIST;
}

/**
 * tr_unpin() - remove the pins tr_pin() made, and DIR when it is empty
 * @dir: the directory given to --pin
 *
 * Checks first that DIR is a directory on a bpffs and that every entry
 * named like one of the pins is a pin of that map of hkv-trace; if not, it
 * removes nothing (DIR may be anything the operator typed).
 *
 * Return: 0, or -errno with a message printed.
 */
int tr_unpin(const char *dir)
{
	int fd = open_bpffs_dir(dir, "--unpin"), found = 0, r, ret = 0;
	unsigned i;

	if (fd < 0)
		return fd;
	for (i = 0; i < NPINS; i++) {
		r = is_our_pin(fd, dir, i);
		if (r < 0) {
			close(fd);
			return r;
		}
		found += r;
	}
	if (!found) {
		fprintf(stderr, "hkv-trace: --unpin: %s holds no pins of hkv-trace: nothing "
			"removed\n", dir);
		close(fd);
		return -ENOENT;
	}
	for (i = 0; i < NPINS; i++) {
		if (unlinkat(fd, pin_maps[i].name, 0) && errno != ENOENT) {
			ret = -errno;
			fprintf(stderr, "hkv-trace: unpinning %s/%s: %s\n", dir, pin_maps[i].name,
				strerror(errno));
		}
	}
	close(fd);
	if (rmdir(dir)) {
		int err = errno;

		if (err == ENOTEMPTY || err == EEXIST) {
			fprintf(stderr, "hkv-trace: --unpin: kept %s: it holds other entries\n", dir);
		} else {
			fprintf(stderr, "hkv-trace: rmdir %s: %s\n", dir, strerror(err));
			ret = ret ? ret : -err;
		}
	}
	return ret;
}
