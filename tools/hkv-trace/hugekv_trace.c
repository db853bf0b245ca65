// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * attach.c - load the skeleton, attach its programs to the library's USDT
 * probes (every process that maps it, or one pid), pin and unpin maps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "hugekv.h"
#include "bpf/hugekv.skel.h"
#include "hkv-trace.h"

#define BPF_FS_MAGIC	0xcafe4a11
#define BPFFS		"/sys/fs/bpf"

const char *const tr_probe_name[HKV_P_NR] = {
	"alloc", "free", "evict", "evict_run", "frag", "arena_map", "arena_fallback",
};
const int tr_probe_nargs[HKV_P_NR] = { 6, 5, 5, 5, 6, 5, 6 };

/* maps worth pinning (the ring buffer is drained by its reader) */
static const char *const pin_maps[] = { "counts", "pools", "lanes", "hists" };

/**
 * tr_check_env() - say clearly what is missing before libbpf does
 *
 * Return: 0, or -EPERM (not root), -ENOENT (no kernel BTF).
 */
int tr_check_env(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "hkv-trace: needs root (CAP_BPF, CAP_PERFMON) to load BPF programs\n");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "hkv-trace: /sys/kernel/btf/vmlinux missing: this kernel has no BTF "
			"(CONFIG_DEBUG_INFO_BTF), CO-RE programs cannot load\n");
		return -ENOENT;
	}
	return 0;
}

/*
 * the libhugekv mapping of a process, from /proc/PID/maps: the first one
 * with hugekv probes (a process may also map a copy built without them)
 */
static int lib_of_pid(int pid, char *out, size_t outsz)
{
	char path[64], line[PATH_MAX + 128];
	int ret = -ENOENT, nargs[HKV_P_NR];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (!p || !strstr(p, "/libhugekv"))
			continue;
		p[strcspn(p, "\n")] = 0;
		if (ret)
			snprintf(out, outsz, "%s", p);	/* the first, if none has probes */
		ret = 0;
		if (tr_elf_probes(p, nargs) > 0) {
			snprintf(out, outsz, "%s", p);
			break;
		}
	}
	fclose(f);
	return ret;
}

/**
 * tr_find_lib() - the library file to attach to
 * @pid: -p PID, or -1
 * @given: --lib PATH, or NULL
 * @out: receives the resolved path
 * @outsz: room in @out
 *
 * Without --lib: the libhugekv the process @pid maps, else the one this
 * tool is linked to. Uprobes attach to the file (inode), so symlinks are
 * resolved.
 *
 * Return: 0, or -errno with a message printed.
 */
int tr_find_lib(int pid, const char *given, char *out, size_t outsz)
{
	char found[PATH_MAX];
	Dl_info info;
	int ret;

	if (given) {
		snprintf(found, sizeof(found), "%s", given);
	} else if (pid > 0) {
		ret = lib_of_pid(pid, found, sizeof(found));
		if (ret) {
			fprintf(stderr, "hkv-trace: process %d maps no libhugekv (%s); name it with --lib\n",
				pid, strerror(-ret));
			return ret;
		}
	} else if (dladdr((void *)hkv_pool_create, &info) && info.dli_fname) {
		snprintf(found, sizeof(found), "%s", info.dli_fname);
	} else {
		fprintf(stderr, "hkv-trace: cannot find libhugekv.so; name it with --lib\n");
		return -ENOENT;
	}
	if (!realpath(found, out) || strlen(out) >= outsz) {
		ret = -errno;
		fprintf(stderr, "hkv-trace: %s: %s\n", found, strerror(errno));
		return ret ? ret : -ENAMETOOLONG;
	}
	return 0;
}

/* check the probes are there with the argument counts we decode */
static int check_probes(const char *lib)
{
	int nargs[HKV_P_NR], n, i;

	n = tr_elf_probes(lib, nargs);
	if (n < 0) {
		fprintf(stderr, "hkv-trace: %s: not an ELF file we can read (%s)\n", lib, strerror(-n));
		return n;
	}
	if (n == 0) {
		fprintf(stderr, "hkv-trace: %s has no \"hugekv\" USDT probes (not libhugekv, or "
			"built with -DHKV_NO_PROBES)\n", lib);
		return -ENOENT;
	}
	for (i = 0; i < HKV_P_NR; i++) {
		if (nargs[i] < 0)
			fprintf(stderr, "hkv-trace: warning: %s lacks probe hugekv:%s\n", lib,
				tr_probe_name[i]);
		else if (nargs[i] != tr_probe_nargs[i])
			fprintf(stderr, "hkv-trace: warning: hugekv:%s has %d arguments, expected %d\n",
				tr_probe_name[i], nargs[i], tr_probe_nargs[i]);
	}
	return 0;
}

static struct bpf_program *prog_of(struct hugekv_bpf *s, int id)
{
	struct bpf_program *p[HKV_P_NR] = {
		s->progs.hkv_alloc, s->progs.hkv_free, s->progs.hkv_evict,
		s->progs.hkv_evict_run, s->progs.hkv_frag, s->progs.hkv_arena_map,
		s->progs.hkv_arena_fallback,
	};

	return p[id];
}

static bool wanted(const struct tr_opts *o, int id)
{
	return o->ops || (id != HKV_P_ALLOC && id != HKV_P_FREE);
}

static int attach_all(struct tracer *t, const struct tr_opts *o, const int nargs[])
{
	int id, n = 0;

	for (id = 0; id < HKV_P_NR; id++) {
		if (!wanted(o, id) || nargs[id] < 0)
			continue;
		t->link[id] = bpf_program__attach_usdt(prog_of(t->skel, id), o->pid, t->lib,
						       "hugekv", tr_probe_name[id], NULL);
		if (!t->link[id]) {
			int err = -errno;

			fprintf(stderr, "hkv-trace: attaching hugekv:%s in %s%s: %s\n",
				tr_probe_name[id], t->lib, o->pid > 0 ? " for that pid" : "",
				strerror(-err));
			return err;
		}
		t->attached[id] = true;
		n++;
	}
	return n;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int libbpf_verbose(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/**
 * tr_open() - load the programs and attach the probes @o asks for
 * @t: zeroed tracer
 * @o: options (pid, lib, ops)
 *
 * Return: 0, or -errno with a message printed; tr_close() cleans up either way.
 */
int tr_open(struct tracer *t, const struct tr_opts *o)
{
	int nargs[HKV_P_NR], ret, id;

	libbpf_set_print(o->verbose ? libbpf_verbose : libbpf_quiet);
	ret = tr_find_lib(o->pid, o->lib, t->lib, sizeof(t->lib));
	if (ret)
		return ret;
	ret = check_probes(t->lib);
	if (ret)
		return ret;
	tr_elf_probes(t->lib, nargs);
	t->skel = hugekv_bpf__open();
	if (!t->skel) {
		ret = -errno;
		fprintf(stderr, "hkv-trace: opening the BPF object: %s\n", strerror(-ret));
		return ret;
	}
	for (id = 0; id < HKV_P_NR; id++)
		bpf_program__set_autoload(prog_of(t->skel, id), wanted(o, id) && nargs[id] >= 0);
	ret = hugekv_bpf__load(t->skel);
	if (ret) {
		fprintf(stderr, "hkv-trace: loading the BPF programs: %s%s\n", strerror(-ret),
			ret == -EPERM ? " (root, or CAP_BPF and CAP_PERFMON, needed)" : "");
		return ret;
	}
	t->map_counts = bpf_map__fd(t->skel->maps.counts);
	t->map_pools = bpf_map__fd(t->skel->maps.pools);
	t->map_lanes = bpf_map__fd(t->skel->maps.lanes);
	t->map_hists = bpf_map__fd(t->skel->maps.hists);
	ret = attach_all(t, o, nargs);
	return ret < 0 ? ret : 0;
}

/**
 * tr_events() - open the ring buffer of rare events
 * @t: a loaded tracer
 * @fn: called per event (ring_buffer_sample_fn)
 * @ctx: passed to @fn
 *
 * Return: 0, or -errno with a message printed.
 */
int tr_events(struct tracer *t, int (*fn)(void *, void *, size_t), void *ctx)
{
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), fn, ctx, NULL);
	if (!t->rb) {
		fprintf(stderr, "hkv-trace: ring buffer: %s\n", strerror(errno));
		return -errno;
	}
	return 0;
}

/**
 * tr_close() - detach and free everything tr_open() made (pins stay)
 * @t: the tracer
 */
void tr_close(struct tracer *t)
{
	int id;

	ring_buffer__free(t->rb);
	for (id = 0; id < HKV_P_NR; id++)
		bpf_link__destroy(t->link[id]);
	hugekv_bpf__destroy(t->skel);
	memset(t, 0, sizeof(*t));
}

static bool on_bpffs(const char *path)
{
	struct statfs fs;

	return !statfs(path, &fs) && fs.f_type == BPF_FS_MAGIC;
}

/* make DIR on a bpffs, mounting /sys/fs/bpf when DIR is under it */
static int pin_dir(const char *dir)
{
	char parent[PATH_MAX], *slash;

	if (!strncmp(dir, BPFFS "/", sizeof(BPFFS)) && !on_bpffs(BPFFS) &&
	    mount("bpf", BPFFS, "bpf", 0, NULL)) {
		fprintf(stderr, "hkv-trace: mounting bpffs on " BPFFS ": %s\n", strerror(errno));
		return -errno;
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
	return 0;
}

/**
 * tr_pin() - pin the maps as DIR/<map>, replacing stale pins
 * @t: a loaded tracer
 * @dir: a directory on a bpffs (created if missing)
 *
 * Return: 0, or -errno with a message printed.
 */
int tr_pin(struct tracer *t, const char *dir)
{
	char path[PATH_MAX];
	unsigned i;
	int ret = pin_dir(dir);

	for (i = 0; !ret && i < sizeof(pin_maps) / sizeof(pin_maps[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(t->skel->obj, pin_maps[i]);

		snprintf(path, sizeof(path), "%s/%s", dir, pin_maps[i]);
		if (unlink(path) && errno != ENOENT) {
			ret = -errno;
			fprintf(stderr, "hkv-trace: removing stale pin %s: %s\n", path, strerror(errno));
			break;
		}
		ret = m ? bpf_map__pin(m, path) : -ENOENT;
		if (ret)
			fprintf(stderr, "hkv-trace: pinning %s: %s\n", path, strerror(-ret));
	}
	return ret;
}

/**
 * tr_unpin() - remove the pins tr_pin() made, and DIR when it is empty
 * @dir: the directory given to --pin
 *
 * Return: 0, or -errno with a message printed.
 */
int tr_unpin(const char *dir)
{
	char path[PATH_MAX];
	int ret = 0;
	unsigned i;

	for (i = 0; i < sizeof(pin_maps) / sizeof(pin_maps[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, pin_maps[i]);
		if (unlink(path) && errno != ENOENT) {
			ret = -errno;
			fprintf(stderr, "hkv-trace: unpinning %s: %s\n", path, strerror(errno));
		}
	}
	if (rmdir(dir) && errno != ENOENT) {
		ret = ret ? ret : -errno;
		fprintf(stderr, "hkv-trace: rmdir %s: %s\n", dir, strerror(errno));
	}
	return ret;
}
