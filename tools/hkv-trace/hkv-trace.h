/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv-trace.h - the libbpf skeleton loader's parts: attach.c loads and
 * attaches the programs (and pins maps), elf.c reads the probe notes of the
 * library, view.c reads the maps and prints.
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
	double duration;	/* seconds; 0 = until SIGINT/SIGTERM */
	double interval;	/* live view refresh */
	bool ops;		/* also attach alloc and free */
	bool json;
	bool verbose;
	const char *pin;	/* --pin DIR */
};

struct hugekv_bpf;
struct bpf_link;
struct ring_buffer;

struct tracer {
	struct hugekv_bpf *skel;
	struct bpf_link *link[HKV_P_NR];
	struct ring_buffer *rb;
	bool attached[HKV_P_NR];
	char lib[PATH_MAX];
	int map_counts, map_pools, map_lanes, map_hists;
};

/* probe names and argument counts, by enum hkv_probe_id */
extern const char *const tr_probe_name[HKV_P_NR];
extern const int tr_probe_nargs[HKV_P_NR];

/* elf.c: argument counts of the hugekv probes in @path (-1 = absent) */
int tr_elf_probes(const char *path, int nargs[HKV_P_NR]);

/* attach.c */
int tr_check_env(void);
int tr_find_lib(int pid, const char *given, char *out, size_t outsz);
int tr_open(struct tracer *t, const struct tr_opts *o);
int tr_events(struct tracer *t, int (*fn)(void *, void *, size_t), void *ctx);
void tr_close(struct tracer *t);
int tr_pin(struct tracer *t, const char *dir);
int tr_unpin(const char *dir);

/* view.c */
struct view;
struct view *view_new(struct tracer *t, const struct tr_opts *o);
void view_free(struct view *v);
int view_event(void *ctx, void *data, size_t sz);	/* ring buffer callback */
void view_tick(struct view *v, double elapsed);	/* live view, each interval */
void view_final(struct view *v, double elapsed);	/* at exit: hist, json */

#endif /* HKV_TRACE_TOOL_H */
