// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mount.c - `hkvctl mount [--page-size 2M|1G] [--uid U] [--gid G]
 * [--mode MODE] [--dry-run] [--json] DIR`: the hugetlbfs mount a named
 * pool's memory file lives on (the library finds it in /proc/self/mounts
 * by its pagesize). The page size must be one this kernel offers
 * (/sys/kernel/mm/hugepages, under HKVCTL_ROOT when set): else a clear
 * refusal before anything is made. A DIR that already holds a hugetlbfs
 * mount of that page size is success (nothing done); of another page size,
 * or another filesystem, a refusal.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <mntent.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "hkvctl.h"

#define HUGETLBFS_MAGIC	0x958458f6

struct mnt_opts {
	const char *dir;
	uint64_t page;
	long uid, gid, mode;
	bool json, dry;
};

static void mount_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl mount [--page-size 2M|1G] [--uid USER] [--gid GROUP] [--mode MODE]\n"
"                    [--dry-run] [--json] DIR\n\n"
"Mounts hugetlbfs with pages of --page-size (default 2M) on DIR (made if\n"
"missing), for named pools: the library puts a named pool's memory file on\n"
"the hugetlbfs mount of its page size it finds in /proc/self/mounts. Root\n"
"only (mount(2)). Refused, with the reason, when this kernel offers no pages\n"
"of that size (/sys/kernel/mm/hugepages/hugepages-SIZEkB) or DIR holds another\n"
"mount; a hugetlbfs mount of that page size already on DIR is success.\n\n"
"  --page-size SIZE   2M (default) or 1G: a size the kernel offers\n"
"  --uid USER         owner of the mount's root (name or number; default: the\n"
"                     caller). The pools' user must be able to create files\n"
"  --gid GROUP        its group (default: the caller's)\n"
"  --mode MODE        octal permissions of the mount's root (default 0700)\n"
"  --dry-run          check and print the mount it would make; mount nothing\n"
"  --json             one JSON object on stdout\n"
"  -h, --help         this text\n\n"
"Exit status: 0 mounted (or already), 1 refused or failed, 2 usage.\n");
}

/* a user or group: a number, else a name */
static int id_arg(const char *opt, const char *arg, bool group, long *out)
{
	struct passwd *pw;
	struct group *gr;

	if (!tool_parse_int(arg, 0, 0x7fffffffl, out))
		return 0;
	if (group ? !!(gr = getgrnam(arg)) : !!(pw = getpwnam(arg))) {
		*out = group ? (long)gr->gr_gid : (long)pw->pw_uid;
		return 0;
	}
	tool_err("hkvctl mount", "--%s %s: no such %s", opt, arg, group ? "group" : "user");
	return TOOL_USAGE;
}

static int mount_parse(int argc, char **argv, struct mnt_opts *o)
{
	static const struct option lo[] = {
		{ "page-size", required_argument, NULL, 'p' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "mode", required_argument, NULL, 'm' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	*o = (struct mnt_opts){ .page = 2ull << 20, .uid = (long)geteuid(),
				.gid = (long)getegid(), .mode = 0700 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (ctl_arg_size("mount", "page-size", optarg, 1, &o->page))
				return TOOL_USAGE;
			if (o->page != 2ull << 20 && o->page != 1ull << 30) {
				ctl_err("mount", "--page-size %s: 2M or 1G", optarg);
				return TOOL_USAGE;
			}
			break;
		case 'u':
		case 'g':
			if (id_arg(c == 'u' ? "uid" : "gid", optarg, c == 'g',
				   c == 'u' ? &o->uid : &o->gid))
				return TOOL_USAGE;
			break;
		case 'm':
			errno = 0;
			o->mode = strtol(optarg, &end, 8);
			if (errno || !*optarg || *end || o->mode < 0 || o->mode > 01777) {
				ctl_err("mount", "--mode %s: octal, 0 to 1777", optarg);
				return TOOL_USAGE;
			}
			break;
		case 'n': o->dry = true; break;
		case 'j': o->json = true; break;
		case 'h': mount_usage(stdout); return -1;
		default: mount_usage(stderr); return TOOL_USAGE;
		}
	}
	if (argc - optind != 1) {
		ctl_err("mount", "one DIR");
		mount_usage(stderr);
		return TOOL_USAGE;
	}
	o->dir = argv[optind];
	return 0;
}

/* what is mounted on @dir (its last mount), from /proc/self/mounts */
static bool mounted_on(const char *dir, char *type, size_t tn, char *opts, size_t on)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	bool found = false;

	if (!f)
		return false;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_dir, dir))
			continue;
		ctl_fmt(type, tn, "%s", m->mnt_type);
		ctl_fmt(opts, on, "%s", m->mnt_opts);
		found = true;
	}
	endmntent(f);
	return found;
}

static void report(const struct mnt_opts *o, const char *dir, const char *data, bool already,
		   int err)
{
	struct json j;

	if (!o->json) {
		if (!err)
			printf("%s: hugetlbfs %s (%s)\n", dir, o->dry ? "would be mounted" :
			       already ? "already mounted" : "mounted", data);
		return;
	}
	json_begin(&j, stdout);
	json_str(&j, "dir", dir);
	json_u64(&j, "page_size", o->page);
	json_str(&j, "options", data);
	json_bool(&j, "mounted", !err && !o->dry);
	json_bool(&j, "already", already);
	json_bool(&j, "dry_run", o->dry);
	if (err) {
		json_i64(&j, "errno", -err);
		json_str(&j, "error", strerror(-err));
	}
	json_end(&j);
}

/* the mount, checked afterwards: hugetlbfs with pages of the size asked */
static int do_mount(const struct mnt_opts *o, const char *dir, const char *data)
{
	struct statfs sf;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (mount("none", dir, "hugetlbfs", 0, data))
		return -errno;
	if (statfs(dir, &sf) || (unsigned long)sf.f_type != HUGETLBFS_MAGIC ||
	    (uint64_t)sf.f_bsize != o->page) {
		umount(dir);
		return -EPROTO;
	}
	return 0;
}

int cmd_mount(int argc, char **argv)
{
	char data[128], dir[PATH_MAX], type[64] = "", mopts[512] = "", want[32], sz[16];
	struct mnt_opts o;
	bool already = false;
	int rc = mount_parse(argc, argv, &o), err = 0;

	if (rc)
		return rc < 0 ? TOOL_OK : rc;
	ctl_fmt(sz, sizeof(sz), "%s", o.page == 1ull << 30 ? "1G" : "2M");
	if (!ctl_hp_size_supported(o.page)) {
		ctl_err("mount", "%s pages: this kernel offers none (no %s/sys/kernel/mm/hugepages/"
			"hugepages-%llukB); nothing mounted", sz, ctl_root(),
			(unsigned long long)(o.page >> 10));
		report(&o, o.dir, "", false, -EOPNOTSUPP);
		return TOOL_FAIL;
	}
	/* the kernel's path, as /proc/self/mounts names it */
	if (!realpath(o.dir, dir))
		ctl_fmt(dir, sizeof(dir), "%s", o.dir);
	ctl_fmt(data, sizeof(data), "pagesize=%s,mode=%04lo,uid=%ld,gid=%ld", sz, o.mode, o.uid,
		o.gid);
	ctl_fmt(want, sizeof(want), "pagesize=%s", sz);
	if (mounted_on(dir, type, sizeof(type), mopts, sizeof(mopts))) {
		if (strcmp(type, "hugetlbfs") || !strstr(mopts, want)) {
			ctl_err("mount", "%s: %s (%s) is mounted there already; nothing mounted",
				dir, type, mopts);
			report(&o, dir, data, false, -EBUSY);
			return TOOL_FAIL;
		}
		already = true;
	} else if (!o.dry) {
		err = do_mount(&o, dir, data);
	}
	if (err)
		ctl_err("mount", "%s: hugetlbfs %s: %s%s", dir, data, strerror(-err),
			err == -EPERM ? " (root only)" : err == -EINVAL ?
			" (the kernel refused the page size)" : "");
	report(&o, dir, already ? mopts : data, already, err);
	return err ? TOOL_FAIL : TOOL_OK;
}
