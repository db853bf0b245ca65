// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hugekv_trace.c - the loader of bpf/hugekv_trace.bpf.c: open its skeleton,
 * find the libraries (libhugekv.so, and libhugekv-xfer.so when there is
 * one), attach a program to each USDT probe of the list (every process
 * that maps them, or one pid). pin.c pins and unpins its maps.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "hugekv.h"
#include "bpf/hugekv_trace.skel.h"
#include "hkv-trace.h"

#define HKV_PROBE_ROW_(lib, name, ID, ...) \
	[HKV_P_##ID] = { #name, HKV_PROBE_ARGS_STR(__VA_ARGS__), HKV_NARGS_##name, \
			 HKV_PROBE_LIB_##lib },
const struct tr_probe tr_probes[HKV_P_NR] = { HKV_PROBE_LIST(HKV_PROBE_ROW_) };

#define XFER_LIB	"libhugekv-xfer.so"

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
 * the mapping of @stem ("/libhugekv.", "/libhugekv-xfer.") in a process,
 * from /proc/PID/maps: the first one with hugekv probes (a process may also
 * map a copy built without them)
 */
static int lib_of_pid(int pid, const char *stem, char *out, size_t outsz)
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

		if (!p || !strstr(p, stem))
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

static int resolve(const char *found, char *out, size_t outsz)
{
	int ret;

	if (!realpath(found, out) || strlen(out) >= outsz) {
		ret = -errno;
		fprintf(stderr, "hkv-trace: %s: %s\n", found, strerror(errno));
		return ret ? ret : -ENAMETOOLONG;
	}
	return 0;
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
		ret = lib_of_pid(pid, "/libhugekv.", found, sizeof(found));
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
	return resolve(found, out, outsz);
}

/**
 * tr_find_xfer_lib() - the transfer library to attach to, if any
 * @pid: -p PID, or -1
 * @given: --xfer-lib PATH, or NULL
 * @core: the resolved libhugekv path
 * @out: receives the resolved path, "" when there is none
 * @outsz: room in @out
 *
 * Without --xfer-lib: the libhugekv-xfer.so the process @pid maps, else
 * the one beside @core. Its absence is not an error: the transfer probes
 * are then not attached, and a note says so.
 *
 * Return: 0 (found or absent), or -errno when @given cannot be resolved.
 */
int tr_find_xfer_lib(int pid, const char *given, const char *core, char *out, size_t outsz)
{
	char found[PATH_MAX], dir[PATH_MAX];

	out[0] = 0;
	if (given)
		return resolve(given, out, outsz);
	if (pid > 0) {
		if (lib_of_pid(pid, "/" XFER_LIB, found, sizeof(found))) {
			fprintf(stderr, "hkv-trace: note: process %d maps no " XFER_LIB
				": transfer probes not attached\n", pid);
			return 0;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", core);
		snprintf(found, sizeof(found), "%s/" XFER_LIB, dirname(dir));
		if (access(found, R_OK)) {
			fprintf(stderr, "hkv-trace: note: no %s: transfer probes not attached "
				"(--xfer-lib PATH names it)\n", found);
			return 0;
		}
	}
	return resolve(found, out, outsz);
}

/* check the probes of library @lib are in @path with the argument counts
 * we decode */
static int check_probes(const char *path, enum hkv_probe_lib lib, int nargs[HKV_P_NR])
{
	int n, i;

	n = tr_elf_probes(path, nargs);
	if (n < 0) {
		fprintf(stderr, "hkv-trace: %s: not an ELF file we can read (%s)\n", path, strerror(-n));
		return n;
	}
	if (n == 0) {
		fprintf(stderr, "hkv-trace: %s has no \"hugekv\" USDT probes (not %s, or "
			"built with -DHKV_NO_PROBES)\n", path,
			lib == HKV_PROBE_LIB_CORE ? "libhugekv" : XFER_LIB);
		return -ENOENT;
	}
	for (i = 0; i < HKV_P_NR; i++) {
		if (tr_probes[i].lib != lib)
			continue;
		if (nargs[i] < 0)
			fprintf(stderr, "hkv-trace: warning: %s lacks probe hugekv:%s\n", path,
				tr_probes[i].name);
		else if (nargs[i] != tr_probes[i].nargs)
			fprintf(stderr, "hkv-trace: warning: hugekv:%s has %d arguments, expected %d\n",
				tr_probes[i].name, nargs[i], tr_probes[i].nargs);
	}
	return 0;
}

static struct bpf_program *prog_of(struct hugekv_trace_bpf *s, int id)
{
#define HKV_PROG_(lib, name, ID, ...) [HKV_P_##ID] = s->progs.hkv_##name,
	struct bpf_program *p[HKV_P_NR] = { HKV_PROBE_LIST(HKV_PROG_) };

	return p[id];
}

static bool wanted(const struct tr_opts *o, int id)
{
	return o->ops || (id != HKV_P_ALLOC && id != HKV_P_FREE);
}

/* the library file a probe is attached in, NULL when it is not traced */
static const char *lib_path(const struct tracer *t, int id)
{
	if (tr_probes[id].lib == HKV_PROBE_LIB_XFER)
		return t->xfer_lib[0] ? t->xfer_lib : NULL;
	return t->lib;
}

static int attach_all(struct tracer *t, const struct tr_opts *o, const int nargs[])
{
	int id, n = 0;

	for (id = 0; id < HKV_P_NR; id++) {
		const char *path = lib_path(t, id);

		if (!wanted(o, id) || nargs[id] < 0 || !path)
			continue;
		t->link[id] = bpf_program__attach_usdt(prog_of(t->skel, id), o->pid, path,
						       "hugekv", tr_probes[id].name, NULL);
		if (!t->link[id]) {
			int err = -errno;

			fprintf(stderr, "hkv-trace: attaching hugekv:%s in %s%s: %s\n",
				tr_probes[id].name, path, o->pid > 0 ? " for that pid" : "",
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
	int nargs[HKV_P_NR], xnargs[HKV_P_NR], ret, id;

	libbpf_set_print(o->verbose ? libbpf_verbose : libbpf_quiet);
	ret = tr_find_lib(o->pid, o->lib, t->lib, sizeof(t->lib));
	if (ret)
		return ret;
	ret = check_probes(t->lib, HKV_PROBE_LIB_CORE, nargs);
	if (ret)
		return ret;
	ret = tr_find_xfer_lib(o->pid, o->xfer_lib, t->lib, t->xfer_lib, sizeof(t->xfer_lib));
	if (ret)
		return ret;
	if (t->xfer_lib[0] && (ret = check_probes(t->xfer_lib, HKV_PROBE_LIB_XFER, xnargs)))
		return ret;
	for (id = 0; id < HKV_P_NR; id++)
		if (tr_probes[id].lib == HKV_PROBE_LIB_XFER)
			nargs[id] = t->xfer_lib[0] ? xnargs[id] : -1;
	t->skel = hugekv_trace_bpf__open();
	if (!t->skel) {
		ret = -errno;
		fprintf(stderr, "hkv-trace: opening the BPF object: %s\n", strerror(-ret));
		return ret;
	}
	for (id = 0; id < HKV_P_NR; id++)
		bpf_program__set_autoload(prog_of(t->skel, id), wanted(o, id) && nargs[id] >= 0);
	ret = hugekv_trace_bpf__load(t->skel);
	if (ret) {
		fprintf(stderr, "hkv-trace: loading the BPF programs: %s%s\n", strerror(-ret),
			ret == -EPERM ? " (root, or CAP_BPF and CAP_PERFMON, needed)" : "");
		return ret;
	}
	t->map_counts = bpf_map__fd(t->skel->maps.counts);
	t->map_pools = bpf_map__fd(t->skel->maps.pools);
	t->map_lanes = bpf_map__fd(t->skel->maps.lanes);
	t->map_hists = bpf_map__fd(t->skel->maps.hists);
	t->map_xfers = bpf_map__fd(t->skel->maps.xfers);
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
	hugekv_trace_bpf__destroy(t->skel);
	memset(t, 0, sizeof(*t));
}
