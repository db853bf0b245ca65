// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv-trace - watch a live hugekv user with eBPF: USDT probes of
 * libhugekv.so, aggregated in the kernel, read once a second.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

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
"  -d, --duration SEC   stop after SEC seconds (default: until Ctrl-C)\n"
"  -i, --interval SEC   live view refresh (default 1)\n"
"      --ops            also attach the per-operation probes alloc and free.\n"
"                       An attached probe costs every hit a trap into the\n"
"                       kernel: about 6 us per hit on a small VM (hkv-bench\n"
"                       trace), 50-100x an untraced alloc. Without --ops only the\n"
"                       low-rate probes are attached (evict, evict_run, frag,\n"
"                       arena_map, arena_fallback); frag is rate-limited.\n"
"      --json           print one JSON object at exit: hit counts per probe\n"
"                       ({\"alloc\": N, \"free\": N, \"evict\": N, ...}; null for\n"
"                       probes not attached), per-pool counters, histograms\n"
"      --pin DIR        pin the maps (counts, pools, lanes, hists) under DIR on\n"
"                       bpffs (mounts /sys/fs/bpf if needed; replaces stale\n"
"                       pins): bpftool map dump pinned DIR/pools. The pins\n"
"                       stay after exit (frozen) until --unpin DIR.\n"
"      --unpin DIR      remove those pins and DIR, then exit\n"
"  -v, --verbose        libbpf's debug output\n"
"  -h, --help           this text\n"
"\n"
"Exit status: 0, or 1 on an error (not root, no BTF, no bpffs, a library\n"
"without probes), said on stderr.\n");
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

static int parse_num(const char *s, double min, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < min) {
		fprintf(stderr, "hkv-trace: bad number '%s'\n", s);
		return -EINVAL;
	}
	return 0;
}

/* Return: 0 to go on, 1 to exit 0 (--help), -EINVAL */
static int parse_args(int argc, char **argv, struct tr_opts *o, const char **unpin)
{
	static const struct option lo[] = {
		{ "pid", 1, NULL, 'p' }, { "lib", 1, NULL, 'l' },
		{ "duration", 1, NULL, 'd' }, { "interval", 1, NULL, 'i' },
		{ "ops", 0, NULL, 'O' }, { "json", 0, NULL, 'J' },
		{ "pin", 1, NULL, 'P' }, { "unpin", 1, NULL, 'U' },
		{ "verbose", 0, NULL, 'v' }, { "help", 0, NULL, 'h' }, { 0 },
	};
	double num;
	int c;

	while ((c = getopt_long(argc, argv, "p:l:d:i:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_num(optarg, 1, &num) || num != (int)num)
				return -EINVAL;
			o->pid = (int)num;
			break;
		case 'l': o->lib = optarg; break;
		case 'd': if (parse_num(optarg, 0, &o->duration)) return -EINVAL; break;
		case 'i': if (parse_num(optarg, 0.01, &o->interval)) return -EINVAL; break;
		case 'O': o->ops = true; break;
		case 'J': o->json = true; break;
		case 'P': o->pin = optarg; break;
		case 'U': *unpin = optarg; break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); return 1;
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

static int list_probes(const struct tr_opts *o)
{
	char lib[PATH_MAX];
	int nargs[HKV_P_NR], n, i;

	if (tr_find_lib(o->pid, o->lib, lib, sizeof(lib)))
		return 1;
	n = tr_elf_probes(lib, nargs);
	if (n < 0) {
		fprintf(stderr, "hkv-trace: %s: %s\n", lib, strerror(-n));
		return 1;
	}
	printf("%s: %d hugekv probes\n", lib, n);
	for (i = 0; i < HKV_P_NR; i++)
		if (nargs[i] >= 0)
			printf("  hugekv:%-15s %d args\n", tr_probe_name[i], nargs[i]);
	return n ? 0 : 1;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* poll the ring buffer, tick the view each interval, until time or a signal */
static int run(struct tracer *t, struct view *v, const struct tr_opts *o)
{
	double t0 = mono(), last = t0, now;
	int ret = 0;

	while (!stop) {
		now = mono();
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
	}
	ring_buffer__consume(t->rb);
	if (mono() - last > 0.05)
		view_tick(v, mono() - last);	/* the last partial interval */
	view_final(v, mono() - t0);
	return ret;
}

static void say_attached(const struct tracer *t, const struct tr_opts *o)
{
	int id, n = 0;

	fprintf(stderr, "hkv-trace: attached");
	for (id = 0; id < HKV_P_NR; id++)
		if (t->attached[id] && ++n)
			fprintf(stderr, " %s", tr_probe_name[id]);
	fprintf(stderr, " (%d probes) in %s, ", n, t->lib);
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
		return ret > 0 ? 0 : 1;
	if (unpin)
		return tr_unpin(unpin) ? 1 : 0;
	if (o.mode == MODE_PROBES)
		return list_probes(&o);
	if (tr_check_env())
		return 1;
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
	return ret ? 1 : 0;
}
