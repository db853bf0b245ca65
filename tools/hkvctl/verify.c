// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * verify.c - `hkvctl verify --pid PID`: for each mapping of a process that
 * looks like a hugekv arena (hugetlb, THP-advised, NUMA-bound, or named
 * hugekv), the page size and node of its memory, flagging misplaced pages
 * (on a node other than the policy's or --node) and downgraded memory
 * (4 KiB where hugepages were meant, THP partly split).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

enum { PROB_MISPLACED = 1, PROB_DOWNGRADED = 2, PROB_SMALL_PAGE = 4 };

struct verify {
	int pid, node;			/* node -1: from the mapping's policy */
	uint64_t page_bytes;		/* --page: smallest page accepted, 0 = any */
	uint64_t min_bytes;
	bool json, all;
	char comm[64];
};

struct verdict {
	unsigned problems;
	uint64_t misplaced_bytes, populated;
};

static void verify_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl verify --pid PID [--node N] [--page 2M|1G] [--min-size SIZE]\n"
"                     [--all] [--json]\n"
"\n"
"Reads /proc/PID/smaps and /proc/PID/numa_maps and reports, for each mapping\n"
"that looks like a hugekv arena (hugetlb, MADV_HUGEPAGE, a bind/preferred NUMA\n"
"policy, or a name with \"hugekv\"), its page size, policy, bytes per node\n"
"and how much is populated. Flags:\n"
"  misplaced   pages on a node outside the policy's nodes (or --node)\n"
"  downgraded  a NUMA-bound mapping on 4 KiB pages, or THP partly split\n"
"  small-page  pages smaller than --page\n"
"\n"
"  --pid PID        the process (needs root or the same user)\n"
"  --node N         the node every page should be on\n"
"  --page SIZE      the smallest page size accepted (e.g. 2M)\n"
"  --min-size SIZE  skip smaller mappings (default 2M)\n"
"  --all            list every mapping of at least --min-size\n"
"  --json           one JSON object on stdout\n"
"  -h, --help       this text\n"
"\n"
"Exit status: 0 every mapping is as expected, 1 a problem was flagged or no\n"
"such mapping was found, 2 usage.\n");
}

static bool map_selected(const struct verify *v, const struct map *m)
{
	if (m->end - m->start < v->min_bytes)
		return false;
	return v->all || m->hugetlb || m->page_bytes > 4096 || m->thp_advised ||
	       m->npolicy_nodes > 0 || strstr(m->path, "hugekv");
}

static bool node_expected(const struct verify *v, const struct map *m, int node)
{
	if (v->node >= 0)
		return node == v->node;
	if (!m->npolicy_nodes)
		return true;	/* default/local policy: any node is the policy's */
	for (int i = 0; i < m->npolicy_nodes; i++)
		if (m->policy_nodes[i] == node)
			return true;
	return false;
}

/* THP memory that is all hugepages counts as PMD-sized (2 MiB on x86) */
static uint64_t effective_page(const struct map *m, uint64_t populated)
{
	if (!m->hugetlb && m->thp_advised && populated && m->thp_bytes >= populated)
		return 2ull << 20;
	return m->page_bytes;
}

static struct verdict map_judge(const struct verify *v, const struct map *m)
{
	uint64_t pb = m->numa_page_bytes ? m->numa_page_bytes : m->page_bytes;
	struct verdict d = { 0 };

	d.populated = m->hugetlb ? m->hugetlb_bytes : m->rss;
	for (int n = 0; n < MAPS_MAX_NODES; n++)
		if (m->node_pages[n] && !node_expected(v, m, n))
			d.misplaced_bytes += m->node_pages[n] * pb;
	if (d.misplaced_bytes)
		d.problems |= PROB_MISPLACED;
	if (!m->hugetlb && m->page_bytes <= 4096 && m->npolicy_nodes > 0 &&
	    (!m->thp_advised || m->thp_bytes < d.populated))
		d.problems |= PROB_DOWNGRADED;
	if (v->page_bytes && effective_page(m, d.populated) < v->page_bytes)
		d.problems |= PROB_SMALL_PAGE;
	return d;
}

static void problems_str(unsigned p, char *buf, size_t n)
{
	ctl_fmt(buf, n, "%s%s%s%s", p ? "" : "ok",
		p & PROB_MISPLACED ? "misplaced " : "",
		p & PROB_DOWNGRADED ? "downgraded " : "",
		p & PROB_SMALL_PAGE ? "small-page " : "");
	if (p)
		buf[strlen(buf) - 1] = '\0';
}

static void print_text_map(const struct map *m, const struct verdict *d)
{
	char a[32], b[32], c[32], nodes[256] = "", prob[64];
	uint64_t pb = m->numa_page_bytes ? m->numa_page_bytes : m->page_bytes;

	for (int n = 0; n < MAPS_MAX_NODES; n++)
		if (m->node_pages[n]) {
			size_t l = strlen(nodes);

			ctl_fmt(nodes + l, sizeof(nodes) - l, "%sN%d=%s", l ? "," : "", n,
				ctl_fmt_size(m->node_pages[n] * pb, c, sizeof(c)));
		}
	problems_str(d->problems, prob, sizeof(prob));
	printf("  %012" PRIx64 "-%012" PRIx64 " %8s %5s%-4s %-10s %-20s %5.1f%% %s\n",
	       m->start, m->end, ctl_fmt_size(m->end - m->start, a, sizeof(a)),
	       ctl_fmt_size(m->page_bytes, b, sizeof(b)),
	       m->hugetlb ? "" : m->thp_advised ? "+thp" : "",
	       m->policy[0] ? m->policy : "-", nodes[0] ? nodes : "-",
	       100.0 * (double)d->populated / (double)(m->end - m->start), prob);
	if (d->misplaced_bytes)
		printf("      %s on a node outside %s\n",
		       ctl_fmt_size(d->misplaced_bytes, a, sizeof(a)), m->policy);
	if (m->thp_advised && !m->hugetlb)
		printf("      THP: %s of %s populated are hugepages\n",
		       ctl_fmt_size(m->thp_bytes, a, sizeof(a)),
		       ctl_fmt_size(d->populated, b, sizeof(b)));
}

#define MAP_F(m, t)	JSON_FIELD(struct map, m, t)
static const struct json_field map_fields[] = {
	MAP_F(start, JSON_U64), MAP_F(end, JSON_U64), MAP_F(page_bytes, JSON_U64),
	MAP_F(hugetlb, JSON_BOOL), MAP_F(thp_advised, JSON_BOOL), MAP_F(thp_bytes, JSON_U64),
	MAP_F(dontfork, JSON_BOOL),
};

static void json_map(struct json *j, const struct map *m, const struct verdict *d)
{
	uint64_t pb = m->numa_page_bytes ? m->numa_page_bytes : m->page_bytes;
	char prob[64];

	json_obj(j, NULL);
	json_fields(j, m, map_fields, JSON_NFIELDS(map_fields));
	json_u64(j, "bytes", m->end - m->start);
	json_str(j, "path", m->path);
	json_str(j, "policy", m->policy[0] ? m->policy : NULL);
	json_u64(j, "populated_bytes", d->populated);
	json_obj(j, "node_bytes");
	for (int n = 0; n < MAPS_MAX_NODES; n++)
		if (m->node_pages[n]) {
			char k[16];

			ctl_fmt(k, sizeof(k), "%d", n);
			json_u64(j, k, m->node_pages[n] * pb);
		}
	json_close(j);
	json_u64(j, "misplaced_bytes", d->misplaced_bytes);
	problems_str(d->problems, prob, sizeof(prob));
	json_str(j, "status", prob);
	json_close(j);
}

static int verify_args(int argc, char **argv, struct verify *v)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "node", required_argument, NULL, 'n' },
		{ "page", required_argument, NULL, 'P' },
		{ "min-size", required_argument, NULL, 'm' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	long x;
	int c;

	while ((c = getopt_long(argc, argv, "p:n:P:m:ajh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (ctl_arg_int("verify", "pid", optarg, 1, 1L << 30, &x))
				return -EINVAL;
			v->pid = (int)x;
			break;
		case 'n':
			if (ctl_arg_int("verify", "node", optarg, 0, MAPS_MAX_NODES - 1, &x))
				return -EINVAL;
			v->node = (int)x;
			break;
		case 'P':
			if (ctl_arg_size("verify", "page", optarg, 1, &v->page_bytes))
				return -EINVAL;
			break;
		case 'm':
			if (ctl_arg_size("verify", "min-size", optarg, 1, &v->min_bytes))
				return -EINVAL;
			break;
		case 'a': v->all = true; break;
		case 'j': v->json = true; break;
		case 'h': verify_usage(stdout); return 1;
		default: verify_usage(stderr); return -EINVAL;
		}
	}
	if (ctl_no_operands("verify", argc, argv))
		return -EINVAL;
	if (!v->pid) {
		ctl_err("verify", "--pid is required");
		return -EINVAL;
	}
	return 0;
}

static int verify_report(const struct verify *v, const struct maps *ms)
{
	int nsel = 0, nbad = 0;
	struct json j;

	if (v->json) {
		json_begin(&j, stdout);
		json_i64(&j, "pid", v->pid);
		json_str(&j, "comm", v->comm);
		json_i64(&j, "expected_node", v->node);
		json_u64(&j, "expected_page_bytes", v->page_bytes);
		json_arr(&j, "mappings");
	} else {
		printf("pid %d (%s)\n  %-25s %8s %9s %-10s %-20s %6s %s\n", v->pid, v->comm,
		       "mapping", "size", "page", "policy", "nodes", "pop", "status");
	}
	for (int i = 0; i < ms->n; i++) {
		const struct map *m = &ms->m[i];
		struct verdict d;

		if (!map_selected(v, m))
			continue;
		d = map_judge(v, m);
		nsel++;
		nbad += d.problems != 0;
		if (v->json)
			json_map(&j, m, &d);
		else
			print_text_map(m, &d);
	}
	if (v->json) {
		json_close(&j);
		json_i64(&j, "problems", nbad);
		json_bool(&j, "ok", nsel && !nbad);
		json_end(&j);
	} else if (!nsel) {
		printf("  no hugepage, THP or NUMA-bound mapping of at least %" PRIu64
		       " bytes: the process holds no hugekv pool\n", v->min_bytes);
	} else {
		printf("%d mapping%s, %d with problems\n", nsel, nsel == 1 ? "" : "s", nbad);
	}
	return nsel && !nbad ? TOOL_OK : TOOL_FAIL;
}

int cmd_verify(int argc, char **argv)
{
	struct verify v = { .node = -1, .min_bytes = 2ull << 20 };
	struct maps ms;
	char p[512];
	int err, rc;

	err = verify_args(argc, argv, &v);
	if (err)
		return err > 0 ? TOOL_OK : TOOL_USAGE;
	err = maps_read(v.pid, &ms);
	if (err) {
		ctl_err("verify", "pid %d: %s%s", v.pid, strerror(-err),
			err == -EACCES || err == -EPERM ? " (needs root or the same user)" :
			err == -ENOENT ? " (no such process)" : "");
		return TOOL_FAIL;
	}
	if (ctl_read_str(ctl_path(p, sizeof(p), "/proc/%d/comm", v.pid), v.comm,
			 sizeof(v.comm)) < 0)
		v.comm[0] = '\0';
	rc = verify_report(&v, &ms);
	maps_free(&ms);
	return rc;
}
