/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv-trace.h - the libbpf skeleton loader's parts: hugekv_trace.c loads
 * bpf/hugekv_trace.bpf.c and attaches its programs (and pins maps), elf.c
 * reads the probe notes of the libraries, view.c reads the maps and prints.
 */
#ifndef HKV_TRACE_TOOL_H
#define HKV_TRACE_TOOL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../bpf/hugekv_trace.h"

enum tr_mode { MODE_LIVE, MODE_HIST, MODE_EVENTS, MODE_PROBES };

struct tr_opts {
	enum tr_mode mode;
	int pid;		/* -1: every process that maps the library */
	const char *lib;	/* NULL: find it (-p's maps, else our own) */
	const char *xfer_lib;	/* NULL: find libhugekv-xfer.so (-p's maps,
				 * else beside the library) */
	double duration;	/* seconds; 0 = until SIGINT/SIGTERM */
	double interval;	/* live view refresh */
	bool ops;		/* also attach alloc and free */
	bool json;
	bool verbose;
	const char *pin;	/* --pin DIR */
};

struct hugekv_trace_bpf;
struct bpf_link;
struct ring_buffer;

struct tracer {
	struct hugekv_trace_bpf *skel;
	struct bpf_link *link[HKV_P_NR];
	struct ring_buffer *rb;
	bool attached[HKV_P_NR];
	char lib[PATH_MAX];
	char xfer_lib[PATH_MAX];	/* "" when no libhugekv-xfer.so is traced */
	int map_counts, map_pools, map_lanes, map_hists, map_xfers;
};

/* the probes (bpf/hugekv_probes.h), by enum hkv_probe_id */
struct tr_probe {
	const char *name;
	const char *args;		/* " pool lane ...": names of the arguments */
	int nargs;
	enum hkv_probe_lib lib;		/* the library that fires it */
};
extern const struct tr_probe tr_probes[HKV_P_NR];

/* elf.c: argument counts of the hugekv probes in @path (-1 = absent) */
int tr_elf_probes(const char *path, int nargs[HKV_P_NR]);

/* attach.c */
int tr_check_env(void);
int tr_find_lib(int pid, const char *given, char *out, size_t outsz);
int tr_find_xfer_lib(int pid, const char *given, const char *core, char *out, size_t outsz);
int tr_open(struct tracer *t, const struct tr_opts *o);
int tr_events(struct tracer *t, int (*fn)(void *, void *, size_t), void *ctx);
void tr_close(struct tracer *t);
int tr_pin(struct tracer *t, const char *dir);
int tr_unpin(const char *dir);

/* view.c */
struct view;
/* label.c: a pool's label and a named pool's name, from its stats page
 * ("" if none) */
const char *trace_pool_label(uint32_t tgid, uint64_t pool);
const char *trace_pool_name(uint32_t tgid, uint64_t pool);

struct view *view_new(struct tracer *t, const struct tr_opts *o);
void view_free(struct view *v);
int view_event(void *ctx, void *data, size_t sz);	/* ring buffer callback */
void view_tick(struct view *v, double elapsed);	/* live view, each interval */
bool view_moved(struct view *v);		/* a pool moved since the last tick */
void view_final(struct view *v, double elapsed);	/* at exit: hist, json */

#endif /* HKV_TRACE_TOOL_H */
