/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkvctl.h - shared helpers of the hkvctl subcommands: sysfs/procfs access
 * (under $HKVCTL_ROOT when set, so a captured tree can be inspected and
 * tests can fake a topology) and messages; the JSON writer and the number
 * parsers are the tools' own (tools/lib).
 */
#ifndef HKVCTL_H
#define HKVCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/json_writer.h"
#include "../lib/parse.h"
#include "../lib/tool.h"

#define CTL_MAX_NODES	1024
#define CTL_MAX_SIZES	8

int cmd_topology(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_reserve(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_pools(int argc, char **argv);	/* pools.c */
int cmd_pool(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_mount(int argc, char **argv);	/* mount.c */

/* ---- sysfs.c ------------------------------------------------------------ */
struct ctl_pool {		/* one hugepage pool (a node's, or global) */
	uint64_t total, free, surplus;
	uint64_t resv, overcommit;	/* global pools only */
};

const char *ctl_root(void);
bool ctl_fake_root(void);
/* the path of a /sys or /proc file, under $HKVCTL_ROOT */
const char *ctl_path(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ctl_read_str(const char *path, char *buf, size_t n);
int ctl_read_u64(const char *path, uint64_t *v);
int ctl_write_u64(const char *path, uint64_t v);
int ctl_parse_list(const char *s, int *out, int max);
int ctl_nodes(int *nodes, int max);
bool ctl_node_exists(int node);
int ctl_mem_total(int node, uint64_t *bytes);
int ctl_hp_sizes(uint64_t *sizes, int max);
bool ctl_hp_size_supported(uint64_t page_bytes);
int ctl_pool_read(int node, uint64_t page_bytes, struct ctl_pool *p);
char *ctl_pool_path(char *buf, size_t n, int node, uint64_t page_bytes,
		    const char *file);

/* ---- util.c ------------------------------------------------------------- */
/* snprintf where truncating a long sysfs name or path is acceptable */
int ctl_fmt(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ctl_arg_size(const char *cmd, const char *opt, const char *arg, uint64_t min,
		 uint64_t *out);
int ctl_arg_int(const char *cmd, const char *opt, const char *arg, long min, long max,
		long *out);
int ctl_no_operands(const char *cmd, int argc, char **argv);
uint64_t ctl_units(uint64_t bytes, uint64_t unit);
const char *ctl_fmt_size(uint64_t bytes, char *buf, size_t n);
/* "hkvctl CMD: message" on stderr (@cmd a string literal) */
#define ctl_err(cmd, ...)	tool_err("hkvctl " cmd, __VA_ARGS__)

#endif /* HKVCTL_H */
