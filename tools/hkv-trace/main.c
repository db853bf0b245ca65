// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv-trace - watch a live hugekv user with eBPF: USDT probes of
 * libhugekv.so (and libhugekv-xfer.so), aggregated in the kernel, read
 * once a second.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "../lib/parse.h"
#include "../lib/tool.h"
#include "hkv-trace.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: hkv-trace [live|hist|events|probes] [options]\n"
"       hkv-trace --unpin DIR\n"
"\n"
"Trace the \"hugekv\" USDT probes of libhugekv.so with CO-RE BPF programs that\n"
"aggregate in the kernel. Attaches to the library file, so every process that\n"
"maps it is traced (or only -p PID). Needs root and a kernel with BTF.\n"
"\n"
"  live     (default) per pool, refreshed every interval: allocations/s,\n"
"           frees/s, evictions/s, free pages, free extents, largest free\n"
"           extent, extents per allocation, and the interval's events\n"
"  hist     at exit: log2 histograms of pages asked, extents returned and\n"
"           evicted unit sizes (implies --ops)\n"
"  events   the rare events as they happen: eviction runs, arena mappings\n"
"           and fallbacks, allocation failures (with --ops)\n"
"  probes   list the probes of the library and their argument counts\n"
"\n"
"  -p, --pid PID        trace one process (default: all)\n"
"  -l, --lib PATH       library to attach to (default: the one PID maps, else\n"
"                       the one hkv-trace is linked to)\n"
"  -x, --xfer-lib PATH  transfer library whose probes xfer_submit and xfer_done\n"
"                       are attached (default: the libhugekv-xfer.so PID maps,\n"
"                       else the one beside the library; without one they are\n"
"                       skipped with a note): per peer transfer rate, latency\n"
"                       and stragglers (transfers over 4x the peer's mean)\n"
"  -d, --duration SEC   stop after SEC seconds (default: until Ctrl-C; with\n"
"                       -p also when the process exits)\n"
"  -i, --interval SEC   live view refresh (default 1)\n"
"      --ops            also attach the per-operation probes alloc and free.\n"
"                       An attached probe costs every hit a trap into the\n"
"                       kernel: about 6 us per hit on a small VM (hkv-bench\n"
"                       trace), 50-100x an untraced alloc. Without --ops only the\n"
"                       low-rate probes are attached (evict, evict_run, frag,\n"
"                       arena_map, arena_fallback); frag is rate-limited.\n"
"      --json           print one JSON object at exit: hit counts per probe\n"
"                       ({\"alloc\": N, \"free\": N, \"evict\": N, ...}; null for\n"
"                       probes not attached), per-pool counters, per-peer\n"
"                       transfer counters, histograms\n"
"      --pin DIR        pin the maps (counts, pools, lanes, hists, xfers) under\n"
"                       DIR on bpffs (mounts /sys/fs/bpf mode 0700 if nothing\n"
"                       is mounted there; replaces stale pins): bpftool map\n"
"                       dump pinned DIR/pools. DIR must be this user's and\n"
"                       writable by nobody else. The pins stay after exit\n"
"                       (frozen) until --unpin DIR.\n"
"      --unpin DIR      remove those pins and DIR, then exit; removes nothing\n"
"                       unless DIR is on bpffs and holds hkv-trace's pins\n"
"  -v, --verbose        libbpf's debug output\n"
"  -h, --help           this text\n"
"      --version        the version\n"
"\n"
"Exit status: 0, 1 on an error (not root, no BTF, no bpffs, a library\n"
"without probes), said on stderr, 2 on bad usage.\n");
}

static int parse_mode(const char *s, struct tr_opts *o)
{
	static const char *const modes[] = { "live", "hist", "events", "probes" };

	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(s, modes[i])) {
			o->mode = (enum tr_mode)i;
			return 0;
		}
	}
	fprintf(stderr, "hkv-trace: unknown command '%s' (live, hist, events, probes)\n", s);
	return -EINVAL;
}

static int parse_num(const char *opt, const char *s, double min, double max, double *out)
{
	int err = tool_parse_double(s, min, max, out);

	if (err)
		fprintf(stderr, "hkv-trace: bad %s '%s': %s (a number of seconds, %g to %g)\n",
			opt, s, tool_parse_strerror(err), min, max);
	return err;
}

/* Return: 0 to go on, 1 to exit 0 (--help, --version), -EINVAL */
static int parse_args(int argc, char **argv, struct tr_opts *o, const char **unpin)
{
	static const struct option lo[] = {
		{ "pid", 1, NULL, 'p' }, { "lib", 1, NULL, 'l' }, { "xfer-lib", 1, NULL, 'x' },
		{ "duration", 1, NULL, 'd' }, { "interval", 1, NULL, 'i' },
		{ "ops", 0, NULL, 'O' }, { "json", 0, NULL, 'J' },
		{ "pin", 1, NULL, 'P' }, { "unpin", 1, NULL, 'U' },
		{ "verbose", 0, NULL, 'v' }, { "help", 0, NULL, 'h' },
		{ "version", 0, NULL, 'V' }, { 0 },
	};
	long pid;
	int c;

	while ((c = getopt_long(argc, argv, "p:l:x:d:i:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (tool_parse_int(optarg, 1, INT_MAX, &pid)) {
				fprintf(stderr, "hkv-trace: bad --pid '%s'\n", optarg);
				return -EINVAL;
			}
			o->pid = (int)pid;
			break;
		case 'l': o->lib = optarg; break;
		case 'x': o->xfer_lib = optarg; break;
		/* a year at most: NaN or inf would never stop or never refresh */
		case 'd': if (parse_num("--duration", optarg, 0, 3.2e7, &o->duration)) return -EINVAL; break;
		case 'i': if (parse_num("--interval", optarg, 0.01, 3.2e7, &o->interval)) return -EINVAL; break;
		case 'O': o->ops = true; break;
		case 'J': o->json = true; break;
		case 'P': o->pin = optarg; break;
		case 'U': *unpin = optarg; break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); return 1;
		case 'V': tool_version("hkv-trace"); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc && parse_mode(argv[optind++], o))
		return -EINVAL;
	if (optind < argc) {
		fprintf(stderr, "hkv-trace: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (o->mode == MODE_HIST)
		o->ops = true;
	return 0;
}

static void list_lib(const char *lib, enum hkv_probe_lib which, int *total)
{
	int nargs[HKV_P_NR], n, i;

	n = tr_elf_probes(lib, nargs);
	if (n < 0) {
		fprintf(stderr, "hkv-trace: %s: %s\n", lib, strerror(-n));
		return;
	}
	printf("%s: %d hugekv probes\n", lib, n);
	for (i = 0; i < HKV_P_NR; i++)
		if (nargs[i] >= 0 && tr_probes[i].lib == which)
			printf("  hugekv:%-15s %d args:%s\n", tr_probes[i].name, nargs[i],
			       nargs[i] == tr_probes[i].nargs ? tr_probes[i].args : " (unknown)");
	*total += n;
}

static int list_probes(const struct tr_opts *o)
{
	char lib[PATH_MAX], xlib[PATH_MAX];
	int total = 0;

	if (tr_find_lib(o->pid, o->lib, lib, sizeof(lib)))
		return TOOL_FAIL;
	list_lib(lib, HKV_PROBE_LIB_CORE, &total);
	if (!tr_find_xfer_lib(o->pid, o->xfer_lib, lib, xlib, sizeof(xlib)) && xlib[0])
		list_lib(xlib, HKV_PROBE_LIB_XFER, &total);
	return total ? TOOL_OK : TOOL_FAIL;
}

/* a descriptor that polls readable when process @pid ends (pidfd: never
 * confused with a later process of the same number); -1 when gone */
static int watch_pid(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static bool pid_gone(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return pidfd < 0 || poll(&p, 1, 0) > 0;
}

/* poll the ring buffer, tick the view each interval, until time, a
 * signal, or the end of the one traced process */
static int run(struct tracer *t, struct view *v, const struct tr_opts *o)
{
	double t0 = tool_now_s(), last = t0, now;
	int ret = 0, pidfd = o->pid > 0 ? watch_pid(o->pid) : -1;

	while (!stop) {
		now = tool_now_s();
		if (o->duration && now - t0 >= o->duration)
			break;
		if (now - last >= o->interval) {
			view_tick(v, now - last);
			last = now;
		}
		ret = ring_buffer__poll(t->rb, 100);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "hkv-trace: polling events: %s\n", strerror(-ret));
			break;
		}
		ret = 0;
		if (o->pid > 0 && pid_gone(pidfd)) {
			fprintf(stderr, "hkv-trace: process %d exited; stopping\n", o->pid);
			break;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	ring_buffer__consume(t->rb);
	/* the last partial interval: unless it is too short to say anything,
	 * or it is short but something happened in it (a burst just before
	 * the stop would be shown nowhere else) */
	if (tool_now_s() - last > 0.05 || view_moved(v))
		view_tick(v, tool_now_s() - last);
	view_final(v, tool_now_s() - t0);
	return ret;
}

static void say_attached(const struct tracer *t, const struct tr_opts *o)
{
	int id, n = 0;

	fprintf(stderr, "hkv-trace: attached");
	for (id = 0; id < HKV_P_NR; id++)
		if (t->attached[id] && ++n)
			fprintf(stderr, " %s", tr_probes[id].name);
	fprintf(stderr, " (%d probes) in %s%s%s, ", n, t->lib, t->xfer_lib[0] ? " and " : "",
		t->xfer_lib);
	if (o->pid > 0)
		fprintf(stderr, "pid %d\n", o->pid);
	else
		fprintf(stderr, "all processes\n");
}

int main(int argc, char **argv)
{
	struct tr_opts o = { .pid = -1, .interval = 1 };
	struct tracer t = { 0 };
	const char *unpin = NULL;
	struct view *v = NULL;
	int ret;

	ret = parse_args(argc, argv, &o, &unpin);
	if (ret)
		return ret > 0 ? TOOL_OK : TOOL_USAGE;
	if (unpin)
		return tr_unpin(unpin) ? TOOL_FAIL : TOOL_OK;
	if (o.mode == MODE_PROBES)
		return list_probes(&o);
	if (tr_check_env())
		return TOOL_FAIL;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = tr_open(&t, &o);
	if (!ret && o.pin)
		ret = tr_pin(&t, o.pin);
	if (!ret && !(v = view_new(&t, &o)))
		ret = -ENOMEM;
	if (!ret)
		ret = tr_events(&t, view_event, v);
	if (!ret) {
		say_attached(&t, &o);
		ret = run(&t, v, &o);
	}
	view_free(v);
	tr_close(&t);
	return ret ? TOOL_FAIL : TOOL_OK;
}
