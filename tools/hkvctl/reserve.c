// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * reserve.c - `hkvctl reserve`: set a node's (or the system's) hugepage
 * pool through sysfs and report what the kernel granted. Large increases
 * go in steps with a progress line; a step the kernel cannot fill ends the
 * climb (memory is fragmented or in use), and the report says how short the
 * pool is and, for 1 GiB pages, points to the boot-time recipe.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hkvctl.h"

#define RESERVE_STEPS	20		/* progress granularity */
#define PROGRESS_BYTES	(1ull << 30)	/* show progress from 1 GiB on */

struct reserve {
	int node;			/* -1: system-wide pool */
	uint64_t bytes;			/* --size */
	uint64_t page_bytes, want;	/* pages asked for */
	uint64_t before, granted, free;
	bool json, quiet, have_size;
};

static void reserve_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl reserve --size SIZE [--node N] [--page 2M|1G] [--json] [--quiet]\n"
"\n"
"Sets the hugepage pool of node N (or, without --node, the system-wide pool,\n"
"which the kernel spreads over the nodes) to SIZE bytes of PAGE pages, through\n"
"/sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/nr_hugepages.\n"
"SIZE is the pool's total (not an increment) and is rounded up to whole pages;\n"
"a smaller SIZE shrinks the pool (pages in use stay, as surplus). Needs root.\n"
"Large increases go in steps with a progress line on stderr. The report says\n"
"what the kernel granted; runtime 1 GiB reservations often fall short (memory\n"
"is fragmented): reserve those at boot, see hkv-hugepages-setup.\n"
"\n"
"  --size SIZE   pool size, K/M/G/T suffixes (powers of 1024), e.g. 200G\n"
"  --node N      NUMA node (default: system-wide pool)\n"
"  --page SIZE   hugepage size, 2M (default) or 1G, as the kernel offers\n"
"  --json        one JSON object on stdout\n"
"  --quiet       no progress line\n"
"  -h, --help    this text\n"
"\n"
"Exit status: 0 granted in full, 1 granted short or failed, 2 usage.\n");
}

static int pool_nr(const struct reserve *r, uint64_t *v)
{
	char p[512];

	return ctl_read_u64(ctl_pool_path(p, sizeof(p), r->node, r->page_bytes,
					  "nr_hugepages"), v);
}

/* write a target; with a fake root, $HKVCTL_FAKE_GRANT_MAX plays the
 * kernel that cannot find more pages */
static int pool_set(const struct reserve *r, uint64_t target)
{
	const char *cap = getenv("HKVCTL_FAKE_GRANT_MAX");
	char p[512];

	if (ctl_fake_root() && cap && target > strtoull(cap, NULL, 10))
		target = strtoull(cap, NULL, 10);
	return ctl_write_u64(ctl_pool_path(p, sizeof(p), r->node, r->page_bytes,
					   "nr_hugepages"), target);
}

static const char *node_label(const struct reserve *r)
{
	static char buf[32];

	if (r->node < 0)
		return "system-wide";
	ctl_fmt(buf, sizeof(buf), "node %d", r->node);
	return buf;
}

static void progress(const struct reserve *r, uint64_t now, bool last)
{
	char s[32];

	if (r->quiet)
		return;
	fprintf(stderr, "%shkvctl reserve: %s %s pool: %" PRIu64 "/%" PRIu64
		" pages (%.0f%%)%s", isatty(2) ? "\r" : "", node_label(r),
		ctl_fmt_size(r->page_bytes, s, sizeof(s)),
		now, r->want, r->want ? 100.0 * (double)now / (double)r->want : 100.0,
		isatty(2) && !last ? "" : "\n");
}

/* climb to r->want in steps; stop at the first step the kernel cannot fill */
static int reserve_climb(struct reserve *r)
{
	uint64_t delta = r->want - r->before, step, target = r->before, now = r->before;
	bool show = delta * r->page_bytes >= PROGRESS_BYTES;
	int err;

	step = show ? (delta + RESERVE_STEPS - 1) / RESERVE_STEPS : delta;
	while (target < r->want) {
		target = target + step < r->want ? target + step : r->want;
		err = pool_set(r, target);
		if (err)
			return err;
		if ((err = pool_nr(r, &now)))
			return err;
		if (show)
			progress(r, now, now < target || target == r->want);
		if (now < target)
			break;
	}
	/* one more try at the full size: the kernel may compact meanwhile */
	if (now < r->want)
		pool_set(r, r->want);
	return 0;
}

static int reserve_apply(struct reserve *r)
{
	char p[512];
	int err;

	if ((err = pool_nr(r, &r->before)))
		return err;
	if (r->want > r->before)
		err = reserve_climb(r);
	else if (r->want < r->before)
		err = pool_set(r, r->want);
	if (err)
		return err;
	if ((err = pool_nr(r, &r->granted)))
		return err;
	ctl_read_u64(ctl_pool_path(p, sizeof(p), r->node, r->page_bytes,
				   "free_hugepages"), &r->free);
	return 0;
}

static void reserve_hint(const struct reserve *r)
{
	char s[32], a[32];
	uint64_t gb = (r->want * r->page_bytes + (1ull << 30) - 1) >> 30;

	ctl_fmt_size(r->page_bytes, s, sizeof(s));
	fprintf(stderr, "hkvctl reserve: short by %" PRIu64 " pages (%s): the node's memory "
		"is in use or too fragmented for %s pages.\n", r->want - r->granted,
		ctl_fmt_size((r->want - r->granted) * r->page_bytes, a, sizeof(a)), s);
	if (r->page_bytes >= (1ull << 30)) {
		char node[32] = "", cmd[32] = "";

		if (r->node >= 0) {
			ctl_fmt(node, sizeof(node), "%d:", r->node);
			ctl_fmt(cmd, sizeof(cmd), " --node %d", r->node);
		}
		fprintf(stderr, "  1 GiB pages are reliably reserved only at boot: "
			"hkv-hugepages-setup --page 1G --size %" PRIu64 "G%s prints "
			"the kernel command line (hugepagesz=1G hugepages=%s%" PRIu64 ").\n",
			gb, cmd, node, r->want);
	}
	else
		fprintf(stderr, "  Try again after `echo 1 > /proc/sys/vm/compact_memory`, "
			"or reserve early after boot (hkv-hugepages-setup --persist).\n");
}

static void reserve_report(const struct reserve *r)
{
	char s[32], a[32], b[32];
	struct json j;

	if (r->json) {
		json_begin(&j, stdout);
		json_i64(&j, "node", r->node);
		json_u64(&j, "page_bytes", r->page_bytes);
		json_u64(&j, "before", r->before);
		json_u64(&j, "requested", r->want);
		json_u64(&j, "granted", r->granted);
		json_u64(&j, "free", r->free);
		json_u64(&j, "short_pages", r->granted < r->want ? r->want - r->granted : 0);
		json_bool(&j, "ok", r->granted >= r->want);
		json_end(&j);
	} else {
		printf("%s %s pool: %" PRIu64 " -> %" PRIu64 " pages (%s), asked %"
		       PRIu64 " (%s); %" PRIu64 " free\n", node_label(r),
		       ctl_fmt_size(r->page_bytes, s, sizeof(s)),
		       r->before, r->granted, ctl_fmt_size(r->granted * r->page_bytes, a, sizeof(a)),
		       r->want, ctl_fmt_size(r->want * r->page_bytes, b, sizeof(b)), r->free);
	}
	if (r->granted < r->want)
		reserve_hint(r);
}

static int reserve_args(int argc, char **argv, struct reserve *r)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "node", required_argument, NULL, 'n' },
		{ "page", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t bytes = 0;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:n:p:jqh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			/* 0 is allowed here: it empties the pool */
			if (ctl_arg_size("reserve", "size", optarg, 0, &bytes))
				return -EINVAL;
			r->have_size = true;
			break;
		case 'n':
			if (ctl_arg_int("reserve", "node", optarg, 0, CTL_MAX_NODES - 1, &v))
				return -EINVAL;
			r->node = (int)v;
			break;
		case 'p':
			if (ctl_arg_size("reserve", "page", optarg, 4096, &r->page_bytes))
				return -EINVAL;
			break;
		case 'j': r->json = true; break;
		case 'q': r->quiet = true; break;
		case 'h': reserve_usage(stdout); return 1;
		default: reserve_usage(stderr); return -EINVAL;
		}
	}
	if (ctl_no_operands("reserve", argc, argv))
		return -EINVAL;
	r->bytes = bytes;
	r->want = ctl_units(bytes, r->page_bytes);
	return 0;
}

/* the page size and node exist, before anything is written */
static int reserve_validate(const struct reserve *r)
{
	char s[32], m[32];
	uint64_t mem;

	if (!r->have_size) {
		ctl_err("reserve", "--size is required (the pool's total, e.g. 200G)");
		return TOOL_USAGE;
	}
	if (!ctl_hp_size_supported(r->page_bytes)) {
		ctl_err("reserve", "no %s hugepages on this machine (no hugepages-%" PRIu64
			"kB pool in /sys/kernel/mm/hugepages)%s",
			ctl_fmt_size(r->page_bytes, s, sizeof(s)), r->page_bytes >> 10,
			r->page_bytes == (1ull << 30) ? "; 1 GiB pages need CPU support "
			"(pdpe1gb) and usually a boot-time reservation: see "
			"hkv-hugepages-setup --page 1G" : "");
		return TOOL_FAIL;
	}
	if (r->node >= 0 && !ctl_node_exists(r->node)) {
		ctl_err("reserve", "no node %d (see hkvctl topology)", r->node);
		return TOOL_FAIL;
	}
	/* a pool larger than the memory is a typo (16E, an extra digit), and
	 * the kernel would try to turn all of it into hugepages */
	if (!ctl_mem_total(r->node, &mem) && r->want > mem / r->page_bytes) {
		ctl_err("reserve", "--size %s is more than the %s memory (%s): nothing changed",
			ctl_fmt_size(r->bytes, s, sizeof(s)), r->node < 0 ? "machine's" : "node's",
			ctl_fmt_size(mem, m, sizeof(m)));
		return TOOL_FAIL;
	}
	return TOOL_OK;
}

int cmd_reserve(int argc, char **argv)
{
	struct reserve r = { .node = -1, .page_bytes = 2ull << 20 };
	char p[512];
	int err, rc;

	err = reserve_args(argc, argv, &r);
	if (err)
		return err > 0 ? TOOL_OK : TOOL_USAGE;
	rc = reserve_validate(&r);
	if (rc != TOOL_OK)
		return rc;
	err = reserve_apply(&r);
	if (err) {
		ctl_err("reserve", "%s: %s%s", ctl_pool_path(p, sizeof(p), r.node, r.page_bytes,
							  "nr_hugepages"), strerror(-err),
			err == -EACCES || err == -EPERM ? " (needs root)" : "");
		return TOOL_FAIL;
	}
	reserve_report(&r);
	return r.granted >= r.want ? TOOL_OK : TOOL_FAIL;
}
